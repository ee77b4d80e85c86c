"""Big workflow files (issue 25): read, checked and scheduled off the GUI thread behind a
window that shows how far it got; the workflow's window replaces it (real files, real
SQLite stores, real windows offscreen)."""

from __future__ import annotations

from PySide6.QtCore import QTimer

from benchmarks.big_workflows import write_dag
from taskloom.app import Sessions, resume_without_asking


def open_big(tmp_path, settings, n: int, **kw) -> tuple[Sessions, str]:
    path = write_dag(n, tmp_path)
    sessions = Sessions(settings, db=tmp_path / "run.db", data_dir=tmp_path, start=False, **kw)
    sessions.choose_run = resume_without_asking
    return sessions, str(path)


def test_a_big_file_opens_behind_a_window_that_answers_while_it_loads(qtbot, tmp_path, settings):
    sessions, path = open_big(tmp_path, settings, 3000)
    assert sessions.background_open_bytes < (tmp_path / "dag3000.toml").stat().st_size
    ticks: list[int] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(len(ticks)) if sessions.current is None else None)
    timer.start()
    try:
        assert sessions.open(path)
        # open() read nothing on the GUI thread: a window says what is going on
        loading = sessions.loading
        assert loading is not None and sessions.current is None
        assert loading.window.isVisible() and "dag3000.toml" in loading.window.windowTitle()
        qtbot.waitUntil(lambda: sessions.current is not None, timeout=60000)
        window = sessions.current.window
        # the GUI thread went on answering (the timer fired) until the window came
        assert len(ticks) >= 3
        assert window.isVisible() and loading.done  # its window closed (and deleted)
        assert sessions.loading is None
        # the progress counted every task of the file, and the window has them all
        assert loading.progress() == (3000, 3000)
        qtbot.waitUntil(lambda: len(window.bridge.tasks) == 3000, timeout=20000)
        qtbot.waitUntil(window.scene.is_drawn, timeout=30000)
        assert not window.started  # the window's Start, as for a small file
    finally:
        timer.stop()
        sessions.close()


def test_a_small_file_still_opens_at_once(qtbot, tmp_path, settings):
    sessions, path = open_big(tmp_path, settings, 20)
    try:
        assert sessions.open(path)
        assert sessions.loading is None and sessions.current is not None
    finally:
        sessions.close()


def test_closing_the_progress_window_abandons_the_open_and_closes_its_run(
    qtbot, tmp_path, settings
):
    from taskloom.engine.store import SQLiteStore

    sessions, path = open_big(tmp_path, settings, 3000)
    assert sessions.open(path)
    job = sessions.loading
    job.window.close()  # the person gives up
    assert job.abandoned and sessions.loading is None
    # the worker stopped and closed any run it had opened: the store opens again here
    assert job.thread is None or not job.thread.is_alive()
    qtbot.wait(50)  # anything it posted is dropped
    assert sessions.current is None
    SQLiteStore(tmp_path / "run.db").close()
    sessions.close()


def test_a_broken_big_file_lists_its_problems_in_a_window(qtbot, tmp_path, settings, capsys):
    sessions, path = open_big(tmp_path, settings, 3000)
    with open(path, "a") as out:
        out.write('\n[tasks.bad]\ncommand = ["true"]\ndeps = ["nowhere"]\n')
    try:
        assert sessions.open(path)
        qtbot.waitUntil(lambda: sessions.current is not None, timeout=60000)
        assert sessions.loading is None
        window = sessions.current.window
        assert window.problems_dock.isVisible()
        assert "nowhere" in capsys.readouterr().err
    finally:
        sessions.close()
