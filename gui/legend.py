"""The legend strip above the graph: each state's colour, glyph and name.

The chips wrap onto a second line in a narrow window (a small flow layout),
so the legend never forces the window wider than the screen.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLabel, QLayout, QLayoutItem, QSizePolicy, QWidget

from taskloom.engine import TaskState

from .style import (
    RECURRING_MARK,
    STATE_GLYPHS,
    STATE_LABELS,
    is_dark,
    state_colour,
    state_outline,
    text_colour_on,
)

CHIP_PADDING = 18  # a chip's padding and border around its text (the style sheet's)


class FlowLayout(QLayout):
    """Lays items left to right and wraps them like words."""

    def __init__(self, parent=None, spacing: int = 6):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setSpacing(spacing)

    def addItem(self, item) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self):
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._place(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._place(rect, move=True)

    def sizeHint(self) -> QSize:
        return self.minimumSize()

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _place(self, rect: QRect, move: bool) -> int:
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        x, y, line_height = area.x(), area.y(), 0
        for item in self._items:
            hint = item.sizeHint()
            if x + hint.width() > area.right() and line_height > 0:
                x, y = area.x(), y + line_height + self.spacing()
                line_height = 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self.spacing()
            line_height = max(line_height, hint.height())
        return y + line_height - rect.y() + margins.bottom()


class Legend(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("legend")
        layout = FlowLayout(self)
        layout.setContentsMargins(8, 5, 8, 5)
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.chips: dict[TaskState, QLabel] = {}
        for state in TaskState:
            chip = self.chips[state] = QLabel(f"{STATE_GLYPHS[state]} {STATE_LABELS[state]}")
            chip.setObjectName(f"legend_{state.value}")
            layout.addWidget(chip)
        self._style_chips()
        note = QLabel(f"{RECURRING_MARK} recurring · #n attempt")
        note.setToolTip("Drag from a task's ○ port onto another task to make it wait for the first")
        note.setEnabled(False)
        layout.addWidget(note)
        self.note = note
        self.compact = False

    def full_width(self) -> int:
        """The width the legend needs on one line with every label written out."""
        layout = self.layout()
        assert layout is not None  # set in __init__
        margins = layout.contentsMargins()
        chips = [
            chip.fontMetrics().horizontalAdvance(self._text(s, False)) + CHIP_PADDING
            for s, chip in self.chips.items()
        ]
        note = self.note.fontMetrics().horizontalAdvance(self.note.text())
        spacing = layout.spacing() * len(chips)
        return sum(chips) + note + spacing + margins.left() + margins.right()

    @staticmethod
    def _text(state: TaskState, compact: bool) -> str:
        return STATE_GLYPHS[state] if compact else f"{STATE_GLYPHS[state]} {STATE_LABELS[state]}"

    def resizeEvent(self, event) -> None:
        """A narrow window folds the legend to one line: the glyphs on their colours
        (each says its state on hover) and no note, instead of three rows of chips."""
        compact = event.size().width() < self.full_width()
        if compact != self.compact:
            self.compact = compact
            for state, chip in self.chips.items():
                chip.setText(self._text(state, compact))
                chip.setToolTip(STATE_LABELS[state] if compact else "")
            self.note.setVisible(not compact)
            self.updateGeometry()
        super().resizeEvent(event)

    def _style_chips(self) -> None:
        dark = is_dark(self.palette())
        for state, chip in self.chips.items():
            fill = state_colour(state, dark)
            chip.setStyleSheet(
                f"background:{fill.name()}; color:{text_colour_on(fill).name()};"
                f"border:1px solid {state_outline(state, dark).name()};"
                " border-radius:8px; padding:1px 7px;"
            )

    def changeEvent(self, event) -> None:
        if event.type() == event.Type.PaletteChange and hasattr(self, "chips"):
            self._style_chips()  # the dark theme has its own cancelled grey
        super().changeEvent(event)
