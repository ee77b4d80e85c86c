"""The window shown at once while a big workflow file is read, checked and scheduled
off the GUI thread (``taskloom.sessions``): what it is doing, and how many of the
file's tasks the run has so far. The workflow's own window replaces it when ready.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QProgressBar, QVBoxLayout, QWidget

from . import relay
from .icons import icon

POLL_MS = 100  # how often the progress is read (a counter the worker keeps)


class LoadingWindow(QWidget):
    """``progress()`` (set by ``follow``) returns (done, total); total 0: not known yet."""

    closed = Signal()  # the window was closed (by the person, or once the open is over)

    def __init__(self, name: str, settings: QSettings | None = None, parent=None):
        super().__init__(parent)
        relay.install()  # the worker posts its stages here
        self.setObjectName("loadingWindow")
        self.setWindowTitle(f"{name} — Taskloom")
        self.setWindowIcon(icon("app"))
        layout = QVBoxLayout(self)
        layout.addStretch(2)
        self.title = QLabel(f"Opening {name}")
        self.title.setObjectName("loadingTitle")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.4)
        self.title.setFont(font)
        self.stage = QLabel("Reading and checking the file…")
        self.stage.setObjectName("loadingStage")
        self.bar = QProgressBar()
        self.bar.setObjectName("loadingProgress")
        self.bar.setRange(0, 0)  # busy until the number of tasks is known
        self.bar.setMinimumWidth(320)  # room for "12,345 of 100,000 tasks"
        self.bar.setMaximumWidth(480)
        self.bar.setTextVisible(True)
        for widget in (self.title, self.stage, self.bar):
            layout.addWidget(widget, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(3)
        self.failed = False
        self._progress = None
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._poll)
        geometry = settings.value("window/geometry") if settings is not None else None
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)  # where the workflow's window will be
        else:
            self.resize(1400, 900)

    def follow(self, progress) -> None:
        """Show ``progress()`` = (done, total) every POLL_MS while shown."""
        self._progress = progress
        self._poll()
        self._timer.start()

    def set_stage(self, text: str) -> None:
        self.stage.setText(text)

    def fail(self, text: str) -> None:
        """Nothing opened: say why (the person closes the window)."""
        self.failed = True
        self._timer.stop()
        self.title.setText("Cannot open the workflow")
        self.stage.setText(text)
        self.bar.hide()

    def call(self, function, args: tuple = ()) -> None:
        """Run ``function(*args)`` here, on the GUI thread (``relay.post`` from a worker)."""
        function(*args)

    def _poll(self) -> None:
        if self._progress is None:
            return
        done, total = self._progress()
        if total:
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))
            self.bar.setFormat(f"{min(done, total):,} of {total:,} tasks")

    def closeEvent(self, event) -> None:
        self._timer.stop()
        super().closeEvent(event)
        self.closed.emit()
