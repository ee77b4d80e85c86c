"""Desktop notifications (a fake notifier takes the call), the tray icon (real,
offscreen) and the Preferences that turn both off."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QDialog

from taskloom.app import WorkflowSession
from taskloom.engine.workflow import load
from taskloom.gui.notifications import NOTIFY_KEY, TRAY_KEY

PASS = f'command = ["{sys.executable}", "-c", "pass"]'
FAIL = f'command = ["{sys.executable}", "-c", "import sys; sys.exit(3)"]'


class FakeNotifier:
    def __init__(self):
        self.calls: list[tuple[str, str, bool]] = []
        self.tasks: list[str | None] = []

    def notify(self, title: str, text: str, error: bool, task=None) -> None:
        self.calls.append((title, text, error))
        self.tasks.append(task)


def session_for(tmp_path, settings, body: str, name="alerts"):
    path = tmp_path / f"{name}.toml"
    path.write_text(f'[workflow]\nname = "{name}"\nworkers = 2\n\n{body}', encoding="utf-8")
    session = WorkflowSession(load(path), settings, start=False)
    fake = FakeNotifier()
    session.window.notices.notifier = fake
    return session, fake


def test_a_task_that_fails_for_good_is_told_with_its_error_and_the_click_selects_it(
    qtbot, settings, tmp_path
):
    body = f'[tasks.bad]\n{FAIL}\n\n[tasks.later]\n{PASS}\nafter = "1h"\n'
    session, fake = session_for(tmp_path, settings, body)
    try:
        window = session.window
        assert fake.calls == []  # nothing runs, nothing is told
        session.start()
        qtbot.waitUntil(lambda: bool(fake.calls), timeout=20000)
        title, text, error = fake.calls[0]
        assert title == "bad failed" and error
        assert "alerts" in text and "3" in text  # the workflow and the exit code
        assert len(fake.calls) == 1  # "later" waits an hour: the run is not finished
        assert fake.tasks == ["bad"]
        window.notices.tray.messageClicked.emit()  # the person clicks the message
        assert window.selected == ["bad"]
    finally:
        session.close()


def test_a_finished_run_is_told_once_with_its_failures(qtbot, settings, tmp_path):
    body = f"[tasks.ok]\n{PASS}\n\n[tasks.bad]\n{FAIL}\n\n"
    body += f'[tasks.after_ok]\n{PASS}\ndeps = ["ok"]\n'
    session, fake = session_for(tmp_path, settings, body)
    try:
        session.start()
        qtbot.waitUntil(lambda: any("finished" in c[0] for c in fake.calls), timeout=20000)
        finished = [c for c in fake.calls if "finished" in c[0]]
        assert len(finished) == 1
        title, text, error = finished[0]
        assert title == "alerts finished: 1 failed" and error
        assert text.startswith("bad: ") and "2 succeeded" in text
        assert session.window.notices.last_task == "bad"
    finally:
        session.close()


def test_notifications_can_be_turned_off_in_preferences(qtbot, settings, tmp_path):
    session, fake = session_for(tmp_path, settings, f"[tasks.bad]\n{FAIL}\n")
    try:
        dialog = session.window.show_preferences()
        assert dialog.notify.isChecked() and dialog.tray.isChecked()
        dialog.notify.setChecked(False)
        dialog.accept()
        assert dialog.result() == QDialog.DialogCode.Accepted
        session.start()
        qtbot.waitUntil(lambda: session.window.bridge.tasks["bad"].state.settled, timeout=20000)
        assert fake.calls == []
        settings.sync()
        assert settings.value(NOTIFY_KEY) in (False, "false")
        again = session.window.show_preferences()  # persisted
        assert not again.notify.isChecked()
        again.reject()
    finally:
        session.close()


def test_the_tray_icon_shows_while_the_window_runs_recurring_schedules(qtbot, settings, tmp_path):
    session, _fake = session_for(tmp_path, settings, f'[tasks.tick]\n{PASS}\nevery = "1h"\n')
    try:
        tray = session.window.notices.tray
        assert not tray.isVisible()  # shown, not running: it owns no schedule yet
        session.start()
        assert tray.isVisible()
        assert "recurring schedule running" in tray.toolTip()
        settings.setValue(TRAY_KEY, False)
        session.window.notices.update_tray()
        assert not tray.isVisible()
        settings.setValue(TRAY_KEY, True)
        session.window.notices.update_tray()
        assert tray.isVisible()
    finally:
        session.close()
    assert not tray.isVisible()  # gone with the window


def test_a_one_shot_workflow_has_no_tray_icon(qtbot, settings, tmp_path):
    session, _fake = session_for(tmp_path, settings, f"[tasks.ok]\n{PASS}\n")
    try:
        session.start()
        assert not session.window.notices.tray.isVisible()
    finally:
        session.close()


def test_the_tray_notifier_shows_the_tray_for_its_message_and_hides_it_after(
    qtbot, settings, tmp_path
):
    # No session bus here (conftest): Qt's tray message it is.
    path = tmp_path / "real.toml"
    path.write_text(f'[workflow]\nname = "real"\n\n[tasks.bad]\n{FAIL}\n', encoding="utf-8")
    session = WorkflowSession(load(path), settings, start=False)
    try:
        notices = session.window.notices
        tray = notices.tray
        assert not tray.isVisible()
        session.start()
        qtbot.waitUntil(lambda: notices.last_task == "bad", timeout=20000)
        assert tray.isVisible()  # Qt shows a message only from a tray entry
        assert notices.notifier._hide.isActive()
        notices.notifier._hide_again()  # the message's time is over
        assert not tray.isVisible()
    finally:
        session.close()


def test_with_a_session_bus_the_notification_goes_there_and_its_click_selects_the_task(
    qtbot, settings, tmp_path, monkeypatch
):
    from taskloom.gui.desktop_notify import FreedesktopNotifier
    from tests._dbus import FakeNotifications, session_bus

    with session_bus(tmp_path) as address:
        service = FakeNotifications(address, click="show")  # clicked as soon as shown
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        body = f'[tasks.bad]\n{FAIL}\n\n[tasks.later]\n{PASS}\nafter = "1h"\n'
        path = tmp_path / "service.toml"
        path.write_text(f'[workflow]\nname = "service"\n\n{body}', encoding="utf-8")
        session = WorkflowSession(load(path), settings, start=False)
        try:
            notices = session.window.notices
            assert isinstance(notices.notifier, FreedesktopNotifier)
            session.start()
            qtbot.waitUntil(lambda: session.window.selected == ["bad"], timeout=20000)
            [(app, title, text, urgency)] = service.calls
            assert (app, title, urgency) == ("Taskloom", "bad failed", 2)  # 2: critical
            assert text.startswith("service: ") and "3" in text  # the workflow, the error
            assert not notices.tray.isVisible()  # no tray needed for these
            qtbot.waitUntil(lambda: not notices.notifier.live)  # it left the bus once closed
        finally:
            session.close()
            service.close()
