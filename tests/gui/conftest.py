"""GUI tests run offscreen; every test must leave no visible top-level window behind."""

from __future__ import annotations

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before anything imports Qt

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from taskloom.engine import ManualClock, Scheduler, SyncExecutor


@pytest.fixture(scope="session", autouse=True)
def collector_on_the_gui_thread(qapp):
    """As the app does (taskloom/app.py): garbage is collected on the GUI thread only.
    Left automatic, a worker of one test collected a scene an earlier test dropped, and
    its timers fired into freed memory (a segfault)."""
    from taskloom.gui.collector import COLLECTOR

    COLLECTOR.install(qapp)
    yield


@pytest.fixture(autouse=True)
def no_leaked_windows(qapp):
    yield
    QApplication.processEvents()
    visible = [w for w in QApplication.topLevelWidgets() if w.isVisible()]
    assert not visible, f"test left visible top-level widgets: {visible}"


@pytest.fixture(autouse=True)
def no_close_questions(monkeypatch):
    """pytest-qt closes a test's windows itself: a modal question would hang it. Tests
    of the question turn it on for their window (``close_question.enabled``)."""
    from taskloom.gui.close_question import CloseQuestion

    monkeypatch.setattr(CloseQuestion, "asks_by_default", False)


@pytest.fixture(autouse=True)
def no_user_settings(tmp_path_factory):
    """QSettings of the user scope (the window's defaults, recent files) go to a temp
    folder: no test reads or writes the person's own ~/.config."""
    folder = str(tmp_path_factory.mktemp("config"))
    for kind in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(kind, QSettings.Scope.UserScope, folder)


@pytest.fixture(autouse=True)
def no_desktop_notifications(monkeypatch):
    """Windows in tests send no real desktop notifications: without a session bus
    they use the tray (offscreen). The test of the session bus starts its own."""
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)


@pytest.fixture
def settings(tmp_path):
    """A throwaway settings file, so tests never touch the user's."""
    return QSettings(str(tmp_path / "taskloom.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def manual_scheduler():
    """A deterministic engine: nothing runs until the clock is advanced."""
    clock = ManualClock()
    scheduler = Scheduler(workers=2, clock=clock, executor=SyncExecutor())
    yield scheduler
    scheduler.shutdown(wait=True)


@pytest.fixture
def threaded_scheduler():
    scheduler = Scheduler(workers=4)
    yield scheduler
    scheduler.shutdown(wait=True)


@pytest.fixture
def make_window(qtbot, settings):
    """Build MainWindows that are closed and deleted after the test."""
    from taskloom.gui.main_window import MainWindow

    windows = []

    def make(scheduler, size=(1400, 900)):
        window = MainWindow(scheduler, settings=settings)
        qtbot.addWidget(window)
        window.resize(*size)
        window.show()
        qtbot.waitExposed(window)
        with qtbot.waitActive(window):  # shortcuts only fire in the active window
            window.activateWindow()
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.close_question.enabled = False  # the test is over: no question
        window.close()
        window.deleteLater()
    QApplication.processEvents()
