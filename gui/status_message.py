"""The status bar whose temporary message never runs into its permanent widgets."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics, QPainter
from PySide6.QtWidgets import QLabel, QStatusBar, QStyle, QStyleOption, QWidget

GAP = 12  # between the message's end (or its "…") and the first permanent widget


class ElidingStatusBar(QStatusBar):
    """Qt draws a message up to 2 px before the first permanent widget and cuts it
    there ("…: 0 of✓ 1 succeeded" at 820 px): here it ends ``GAP`` before, elided;
    the whole message is the bar's tooltip while it shows."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.messageChanged.connect(self.setToolTip)

    def message_rect(self) -> QRect:
        """Where the message is drawn: from the left to ``GAP`` before the first widget
        still shown beside it (the permanent ones; Qt hides the others meanwhile)."""
        right = self.width() - GAP
        for child in self.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if child.isVisible() and child.x() > 0:
                right = min(right, child.x() - GAP)
        left = 6
        return QRect(left, 0, max(0, right - left), self.height())

    def shown_message(self) -> str:
        """The message as drawn: elided to its room."""
        return QFontMetrics(self.font()).elidedText(
            self.currentMessage(), Qt.TextElideMode.ElideRight, self.message_rect().width()
        )

    def paintEvent(self, event) -> None:
        if not self.currentMessage():
            super().paintEvent(event)
            return
        painter = QPainter(self)
        option = QStyleOption()
        option.initFrom(self)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_PanelStatusBar, option, painter, self)
        painter.setPen(self.palette().windowText().color())
        painter.drawText(
            self.message_rect(),
            Qt.AlignmentFlag.AlignLeading
            | Qt.AlignmentFlag.AlignVCenter
            | Qt.TextFlag.TextSingleLine,
            self.shown_message(),
        )


class ElidedLabel(QLabel):
    """A plain-text label for the status bar that may be narrower than its text: it
    is drawn elided ("…") rather than holding the window wider (a watching window's
    "◉ Watching the run of taskloom run (pid …, since …)" kept it 1,163 px wide when
    made 820). ``text()`` stays whole."""

    NARROWEST = 120

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(min(hint.width(), self.NARROWEST), hint.height())

    def shown_text(self) -> str:
        return self.fontMetrics().elidedText(
            self.text(), Qt.TextElideMode.ElideRight, self.contentsRect().width()
        )

    def paintEvent(self, event) -> None:
        if self.fontMetrics().horizontalAdvance(self.text()) <= self.contentsRect().width():
            super().paintEvent(event)
            return
        painter = QPainter(self)
        painter.setPen(self.palette().windowText().color())
        painter.drawText(
            self.contentsRect(),
            int(self.alignment() | Qt.TextFlag.TextSingleLine),
            self.shown_text(),
        )
