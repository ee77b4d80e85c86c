"""A bare launch: the start page, recent files, the last session, and Start.

Nothing runs until Start is pressed (or ``--start``): a click on an example in the
start page shows the workflow and leaves its tasks waiting."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from taskloom.app import run_window
from taskloom.desktop import DESKTOP_ID
from taskloom.engine import TaskState
from taskloom.launcher import Launcher

S = TaskState


def write_workflow(folder, name="quick", tasks=("a", "b")):
    lines = [f'[workflow]\nname = "{name}"\nworkers = 2\n']
    for tid in tasks:
        lines.append(f'[tasks.{tid}]\ncommand = ["{sys.executable}", "-c", "pass"]\n')
    path = folder / f"{name}.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def launcher_for(qtbot, settings, tmp_path):
    launcher = Launcher(settings, data_dir=tmp_path / "data")
    return launcher


def click_item(qtbot, widget, row: int) -> None:
    item = widget.item(row)
    rect = widget.visualItemRect(item)
    qtbot.mouseClick(widget.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_a_bare_launch_shows_the_examples_and_opening_one_runs_nothing(qtbot, settings, tmp_path):
    launcher = launcher_for(qtbot, settings, tmp_path)
    try:
        page = launcher.show_start_page()
        qtbot.waitExposed(page)
        examples = page.examples_list
        names = [examples.item(i).text().split("\n")[0] for i in range(examples.count())]
        assert names == ["etl", "flaky", "recurring"]
        assert "pipeline" in examples.item(0).text()  # what the example shows
        # Nothing opened yet: no recent files, nothing to continue.
        assert page.recent_list.count() == 1
        assert not page.recent_list.item(0).flags() & Qt.ItemFlag.ItemIsEnabled
        assert page.continue_button.isHidden()
        assert launcher.sessions.current is None

        click_item(qtbot, examples, 0)
        session = launcher.sessions.current
        assert session is not None and session.workflow.name == "etl"
        assert launcher.page is None  # the start page made way for the window
        window = session.window
        qtbot.waitExposed(window)
        assert not session.started
        assert window.start_bar.isVisible() and window.act_start.isEnabled()
        assert "press Start" in window.start_bar.label.text()
        QApplication.processEvents()
        # The engine holds the tasks and has dispatched none of them.
        infos = session.scheduler.tasks()
        assert len(infos) == 6
        assert all(not session.scheduler.attempts(info.id) for info in infos)
        assert all(info.state in (S.PENDING, S.READY) for info in infos)
    finally:
        launcher.close()


def test_start_runs_the_schedule_and_the_bar_goes(qtbot, settings, tmp_path):
    path = write_workflow(tmp_path)
    launcher = launcher_for(qtbot, settings, tmp_path)
    try:
        assert launcher.open(path)
        session = launcher.sessions.current
        window = session.window
        qtbot.waitExposed(window)
        assert not window.started
        assert all(not session.scheduler.attempts(t) for t in ("a", "b"))
        qtbot.mouseClick(window.start_bar.button, Qt.MouseButton.LeftButton)
        assert session.started and window.started
        assert not window.start_bar.isVisible() and not window.act_start.isEnabled()
        qtbot.waitUntil(
            lambda: all(
                t in window.bridge.tasks and window.bridge.tasks[t].state is S.SUCCEEDED
                for t in ("a", "b")
            ),
            timeout=20000,
        )
        session.start()  # again: nothing changes, nothing runs twice
        assert len(session.scheduler.attempts("a")) == 1
    finally:
        launcher.close()


def test_recent_files_and_the_last_session_come_back(qtbot, settings, tmp_path):
    first = write_workflow(tmp_path, "first")
    second = write_workflow(tmp_path, "second")
    launcher = launcher_for(qtbot, settings, tmp_path)
    try:
        assert launcher.open(first)
        assert launcher.sessions.open(second)  # File > Open in the window
    finally:
        launcher.close()
    assert [p.name for p in launcher.recent.files()] == ["second.toml", "first.toml"]

    again = launcher_for(qtbot, settings, tmp_path)  # the next launch, same settings
    try:
        page = again.show_start_page()
        qtbot.waitExposed(page)
        rows = [page.recent_list.item(i).text().split("\n")[0] for i in range(2)]
        assert rows == ["second", "first"]
        assert page.continue_button.isVisible()
        assert page.continue_button.text() == "Continue with second.toml"
        qtbot.mouseClick(page.continue_button, Qt.MouseButton.LeftButton)
        session = again.sessions.current
        assert session.workflow.path.resolve() == second.resolve()
        assert not session.started  # the last session comes back waiting for Start
    finally:
        again.close()
    # Opening one again moves it to the top, once.
    again.recent.add(first)
    assert [p.name for p in again.recent.files()] == ["first.toml", "second.toml"]


def test_a_recent_file_that_is_gone_is_not_offered(qtbot, settings, tmp_path):
    path = write_workflow(tmp_path, "gone")
    launcher = launcher_for(qtbot, settings, tmp_path)
    launcher.recent.add(path)
    path.unlink()
    try:
        page = launcher.show_start_page()
        assert page.recent_list.count() == 1  # the placeholder only
        assert page.continue_button.isHidden()
    finally:
        launcher.close()


def test_new_opens_an_empty_workflow_that_waits_for_start(qtbot, settings, tmp_path):
    launcher = launcher_for(qtbot, settings, tmp_path)
    try:
        page = launcher.show_start_page()
        qtbot.mouseClick(page.new_button, Qt.MouseButton.LeftButton)
        session = launcher.sessions.current
        assert session is not None and session.workflow.path is None
        assert session.scheduler.tasks() == []
        assert not session.started
        assert session.window.windowTitle().startswith("untitled")
    finally:
        launcher.close()


def test_a_file_that_is_not_there_keeps_the_start_page_and_says_so(qtbot, settings, tmp_path):
    launcher = launcher_for(qtbot, settings, tmp_path)
    missing = tmp_path / "missing.toml"
    try:
        page = launcher.show_start_page()
        assert not launcher.open(missing)
        assert launcher.sessions.current is None and launcher.page is page
        qtbot.waitUntil(launcher.refusal.isVisible)
        assert str(missing) in launcher.refusal.text()
        launcher.refusal.close()
        click_item(qtbot, page.examples_list, 1)  # the page takes the next choice
        assert launcher.sessions.current.workflow.name == "flaky"
    finally:
        launcher.close()


def test_run_window_without_a_file_shows_the_start_page(qtbot, settings, tmp_path):
    picture = tmp_path / "start.png"
    assert run_window(None, screenshot=str(picture), quit_after=0.2) == 0
    image = QImage(str(picture))
    assert not image.isNull() and image.width() >= 600
    # Nothing was opened, so nothing was run or remembered.
    assert run_window(None, quit_after=0.1, settings=settings) == 0
    assert settings.value("recent/files") is None
    # The desktop matches the window to the entry `taskloom install-desktop` writes.
    assert QApplication.desktopFileName() == DESKTOP_ID


def test_closing_a_recurring_workflow_that_never_started_asks_nothing(qtbot, settings, tmp_path):
    from taskloom.app import WorkflowSession
    from taskloom.engine.workflow import load

    path = tmp_path / "tick.toml"
    path.write_text(
        f'[workflow]\nname = "tick"\n\n[tasks.tick]\ncommand = ["{sys.executable}", "-c", "pass"]\n'
        'every = "1h"\n',
        encoding="utf-8",
    )
    db = tmp_path / "tick.db"
    logs = tmp_path / "logs"
    session = WorkflowSession(load(path), settings, db_path=db, log_dir=logs, start=False)
    try:
        # Keeping it running in the background would start what the person never started.
        assert not session.asks_on_close()
        session.start()
        assert session.asks_on_close()
    finally:
        session.close()


def test_file_open_recent_lists_the_recent_workflows_and_opens_one(qtbot, settings, tmp_path):
    first = write_workflow(tmp_path, "first")
    second = write_workflow(tmp_path, "second")
    launcher = launcher_for(qtbot, settings, tmp_path)
    try:
        assert launcher.open(first)
        assert launcher.sessions.open(second)
        menu = launcher.sessions.current.window.recent_menu
        assert menu.isEnabled()
        listed = [action.data() for action in menu.actions()]
        assert listed == [str(second.resolve()), str(first.resolve())]
        menu.actions()[1].trigger()
        session = launcher.sessions.current
        assert session.workflow.path.resolve() == first.resolve()
        assert not session.started  # opened from the menu: it waits for Start too
        assert [a.data() for a in session.window.recent_menu.actions()][0] == str(first.resolve())
    finally:
        launcher.close()


def test_reopening_a_workflow_whose_old_window_is_still_stopping_waits_for_it(
    qtbot, settings, tmp_path
):
    import threading

    first = write_workflow(tmp_path, "first")
    second = write_workflow(tmp_path, "second")
    launcher = launcher_for(qtbot, settings, tmp_path)
    try:
        assert launcher.open(first)
        old = launcher.sessions.current
        release = threading.Event()
        shut_down = old._shut_down

        def slow_shut_down():  # the old engine takes its time to let go of the store
            release.wait(20)
            shut_down()

        old._shut_down = slow_shut_down
        assert launcher.sessions.open(second)
        assert old in launcher.sessions.closing and not old.stopped
        threading.Timer(0.2, release.set).start()  # it lets go while we reopen
        assert launcher.sessions.open(first)  # waits for it, instead of "already running"
        assert old.stopped
        assert launcher.sessions.current.workflow.path.resolve() == first.resolve()
        assert not getattr(launcher.sessions.current, "watching", False)
    finally:
        release.set()
        launcher.close()
