"""Preferences: desktop notifications and the tray icon, each can be turned off."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QDialog, QDialogButtonBox, QLabel, QVBoxLayout

from .notifications import NOTIFY_KEY, TRAY_KEY, setting_on


class PreferencesDialog(QDialog):
    """Two switches, kept in the window's settings when OK is pressed."""

    def __init__(self, settings, parent=None):
        super().__init__(parent)
        self.setObjectName("preferences")
        self.setWindowTitle("Taskloom preferences")
        self.setAccessibleName("Preferences")
        self.settings = settings
        self.notify = QCheckBox("&Notify me when a task fails for good or a run finishes")
        self.notify.setObjectName("notifyCheck")
        self.notify.setAccessibleDescription(
            "A desktop notification with the task and its error; click it to see the task"
        )
        self.notify.setChecked(setting_on(settings, NOTIFY_KEY))
        self.tray = QCheckBox("Show a &tray icon while this window runs recurring schedules")
        self.tray.setObjectName("trayCheck")
        self.tray.setAccessibleDescription("The icon shows the window again when clicked")
        self.tray.setChecked(setting_on(settings, TRAY_KEY))
        note = QLabel(
            "Notifications go to the desktop's notification service (on the session bus) when "
            "there is one, else to the system tray."
        )
        note.setWordWrap(True)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for widget in (self.notify, self.tray, note, buttons):
            layout.addWidget(widget)

    def accept(self) -> None:
        self.settings.setValue(NOTIFY_KEY, self.notify.isChecked())
        self.settings.setValue(TRAY_KEY, self.tray.isChecked())
        self.settings.sync()
        super().accept()
