"""The banner above the graph of a workflow that is shown but not running yet.

Opening a workflow never runs it by itself (a launcher click must not start six
processes): the run waits until the person presses Start, here or in the toolbar.
"""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton

from .style import PAUSED_GLYPH


class StartBar(QFrame):
    """ "Not running yet" and a Start button bound to the window's Start action."""

    def __init__(self, start_action, parent=None):
        super().__init__(parent)
        self.setObjectName("startBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Not running")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        self.label = QLabel()
        self.label.setObjectName("startBarText")
        self.label.setWordWrap(True)
        self.button = QToolButton()
        self.button.setObjectName("startButton")
        self.button.setDefaultAction(start_action)
        self.button.setToolButtonStyle(self.button.toolButtonStyle().ToolButtonTextBesideIcon)
        self.button.setAccessibleName("Start")
        self.button.setAccessibleDescription(start_action.statusTip())
        layout.addWidget(self.label, 1)
        layout.addWidget(self.button)
        self.set_text("")

    def set_text(self, name: str, resumed: bool = False) -> None:
        what = "Its unfinished run was resumed and waits" if resumed else "Nothing runs"
        subject = name or "This workflow"
        text = f"{subject} is not running. {what} until you press Start."
        self.label.setText(text)
        self.setAccessibleDescription(text)


class PauseBar(QFrame):
    """Over the graph while the whole dispatcher is paused: nothing starts (running
    attempts go on), and a Resume all button; hidden otherwise."""

    def __init__(self, resume, parent=None):
        super().__init__(parent)
        self.setObjectName("pauseBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Paused")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 4, 10, 4)
        self.label = QLabel(
            f"<b>{PAUSED_GLYPH} Paused: nothing starts.</b> Running attempts go on; tasks "
            "that come due wait, and recurring ones fold what they miss."
        )
        self.label.setObjectName("pauseBarText")
        self.label.setWordWrap(True)
        self.button = QPushButton("Resume all")
        self.button.setObjectName("resumeAll")
        self.button.setAccessibleName("Resume all")
        self.button.clicked.connect(resume)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.button)
        self.setAccessibleDescription("Paused: nothing starts")
        self.hide()
