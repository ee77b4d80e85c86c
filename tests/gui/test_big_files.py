"""Big workflow files (issue 25): read, checked and scheduled off the GUI thread behind a
window that shows how far it got; the workflow's window replaces it (real files, real
SQLite stores, real windows offscreen)."""

from __future__ import annotations

import gc

from PySide6.QtCore import QTimer

from benchmarks.big_workflows import write_dag
from taskloom.app import Sessions, resume_without_asking
from tests.gui.test_big_find import big_window as drawn_window


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
        assert window.bridge.prepared  # its snapshot made by the worker
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
        from taskloom.gui.collector import COLLECTOR

        assert not COLLECTOR.paused  # paused for the open, collecting again
    finally:
        sessions.close()


def big_window(qtbot, monkeypatch, tmp_path, settings, n: int):
    """A window on ``n`` tasks, with what each slice of the scene's work handles recorded:
    nodes made, representatives placed, edges drawn."""
    from taskloom.gui.graph import scene as scene_module

    slices: dict[str, list[int]] = {"nodes": [], "moves": [], "edges": []}
    drawn = [0]
    add_edge = scene_module.add_edge

    def counting_add_edge(*args):
        drawn[0] += 1
        return add_edge(*args)

    def recorded(name, size):
        method = getattr(scene_module.GraphScene, name)

        def wrapper(self, *args, **kw):
            before = size(self)
            method(self, *args, **kw)
            slices[name_of[name]].append(abs(before - size(self)))

        return wrapper

    name_of = {"_build_slice": "nodes", "_move_slice": "moves", "_edges_slice": "edges"}
    monkeypatch.setattr(scene_module, "add_edge", counting_add_edge)
    plain = scene_module.add_plain_edge

    def counting_plain_edge(*args):
        drawn[0] += 1
        return plain(*args)

    monkeypatch.setattr(scene_module, "add_plain_edge", counting_plain_edge)
    for name, size in (
        ("_build_slice", lambda s: len(s.nodes.made)),  # items made, not tasks shown
        ("_move_slice", lambda s: len(s._move_job or ())),
        ("_edges_slice", lambda s: drawn[0]),
    ):
        monkeypatch.setattr(scene_module.GraphScene, name, recorded(name, size))
    window, scheduler = drawn_window(qtbot, tmp_path, settings, n)
    return window, scheduler, slices


def test_expand_all_on_a_big_graph_is_made_placed_and_drawn_in_bounded_slices(
    qtbot, monkeypatch, tmp_path, settings
):
    from taskloom.gui.graph.scene import EDGES_PER_SLICE, MOVES_PER_SLICE, NODES_PER_SLICE

    n = 3000
    window, scheduler, slices = big_window(qtbot, monkeypatch, tmp_path, settings, n)
    try:
        scene = window.scene
        assert scene.collapsed and len(scene.nodes) < n  # a big graph starts as its groups
        for sizes in slices.values():
            sizes.clear()
        before = len(scene.nodes.made)
        # One node item per task (the bulk cards above this: test_big_expand.py).
        monkeypatch.setattr(scene, "virtual_above", n)
        scene.expand_all()
        qtbot.waitUntil(scene.is_drawn, timeout=60000)
        assert not scene.collapsed and len(scene.nodes) == n
        edges = sum(len(info.deps) for info in scene.tasks.values())
        assert scene.edges_item.path().elementCount() > 0
        # no GUI-thread slice made, placed or drew more than its share
        assert sum(slices["nodes"]) == n - before and max(slices["nodes"]) <= NODES_PER_SLICE
        assert len(slices["nodes"]) >= n // NODES_PER_SLICE
        assert max(slices["moves"]) <= MOVES_PER_SLICE and len(slices["moves"]) >= 2
        assert sum(slices["edges"]) == edges and max(slices["edges"]) <= EDGES_PER_SLICE
    finally:
        window.close()
        scheduler.shutdown(wait=True)


def test_find_opens_the_collapsed_group_of_a_big_graph_and_selects_the_task(
    qtbot, monkeypatch, tmp_path, settings
):
    from taskloom.gui.graph.scene import NODES_PER_SLICE

    window, scheduler, slices = big_window(qtbot, monkeypatch, tmp_path, settings, 3000)
    try:
        scene = window.scene
        target = "t1507"
        assert target not in scene.nodes and scene.group_of(target) in scene.collapsed
        slices["nodes"].clear()
        window.search.setText(target)
        window._find()
        qtbot.waitUntil(lambda: window.selected == [target], timeout=30000)
        assert scene.group_of(target) not in scene.collapsed and target in scene.nodes
        assert scene.nodes[target].isVisible()
        assert max(slices["nodes"]) <= NODES_PER_SLICE
    finally:
        window.close()
        scheduler.shutdown(wait=True)


def test_thousands_of_timeline_lanes_are_ordered_off_the_gui_thread(qtbot, monkeypatch):
    from taskloom.engine import TaskInfo, TaskState
    from taskloom.gui.timeline import SORT_AT_ONCE_UP_TO, Timeline
    from taskloom.gui.timeline import model as model_module

    threads: list[str] = []
    order = model_module.lane_order

    def recording_order(*args):
        import threading

        threads.append(threading.current_thread().name)
        return order(*args)

    monkeypatch.setattr(model_module, "lane_order", recording_order)
    monkeypatch.setattr("taskloom.gui.timeline.widget.lane_order", recording_order)
    n = SORT_AT_ONCE_UP_TO + 500
    # t0 <- t1 <- ... : added downstream first, so the order must change
    infos = {
        f"t{i}": TaskInfo(
            f"t{i}",
            f"t{i}",
            TaskState.PENDING,
            (f"t{i - 1}",) if i else (),
            (),
            0,
            0,
            None,
            False,
            False,
            None,
        )
        for i in reversed(range(n))
    }
    timeline = Timeline(lambda: 0.0)
    qtbot.addWidget(timeline)
    timeline.set_tasks(infos)
    assert timeline.model.lanes[0] == f"t{n - 1}" and timeline.model.order_dirty
    timeline._sort_lanes()
    qtbot.waitUntil(lambda: not timeline.model.order_dirty, timeout=10000)
    assert timeline.model.lanes[:3] == ["t0", "t1", "t2"]
    assert threads == ["taskloom-lane-order"]


def test_a_big_files_first_forecast_waits_until_its_graph_is_drawn(
    qtbot, settings, manual_scheduler
):
    """The first forecast copies every task on a helper thread: started while the graph
    was being worked out, it took the GIL from it (issue 25); it starts once drawn."""
    from taskloom.gui.graph.grouped_scene import BACKGROUND_VIEW_TASKS
    from taskloom.gui.main_window import MainWindow

    for i in range(BACKGROUND_VIEW_TASKS):
        manual_scheduler.schedule(_noop, 3600.0, name=f"t{i}")
    window = MainWindow(manual_scheduler, settings=settings)
    qtbot.addWidget(window)
    forecaster = window.forecast_view.forecaster
    drawn_at_start: list[bool] = []
    forecaster.computing.connect(lambda _h: drawn_at_start.append(window.scene.is_drawn()))
    assert not window.scene.is_drawn()  # its view is worked out on another thread
    forecaster._start()  # as its debounce timer would: held, not started
    assert forecaster.started == 0 and not drawn_at_start
    qtbot.waitUntil(window.scene.is_drawn, timeout=30000)
    qtbot.waitUntil(lambda: forecaster.computed >= 1, timeout=30000)
    assert drawn_at_start and all(drawn_at_start)  # none started before the graph
    window.close_question.enabled = False
    window.close()


def _noop() -> None:
    return None


def test_the_garbage_collector_is_paused_while_a_big_file_opens_until_its_graph_is_drawn(
    qtbot, tmp_path, settings
):
    """Millions of objects that all live on: every full collection walked them again
    (issue 25). Nothing is collected from the open until the graph is drawn."""
    from taskloom.gui.collector import COLLECTOR

    sessions, path = open_big(tmp_path, settings, 3000)
    pauses = COLLECTOR.paused_total
    while_loading: list[tuple[bool, int]] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(
        lambda: (
            while_loading.append((COLLECTOR.paused, COLLECTOR.collections))
            if sessions.current is None
            else None
        )
    )
    timer.start()
    try:
        assert not COLLECTOR.paused
        assert sessions.open(path)
        assert COLLECTOR.paused
        qtbot.waitUntil(lambda: sessions.current is not None, timeout=60000)
        qtbot.waitUntil(sessions.current.window.scene.is_drawn, timeout=30000)
        qtbot.waitUntil(lambda: not COLLECTOR.paused, timeout=5000)  # collecting again
        assert COLLECTOR.paused_total == pauses + 1
        assert while_loading and all(paused for paused, _ in while_loading)
        assert len({count for _, count in while_loading}) == 1  # nothing collected meanwhile
        # what the open made is frozen: the collector's next pass does not walk it all
        assert COLLECTOR.frozen and gc.get_freeze_count() > 3000
    finally:
        timer.stop()
        sessions.close()
    assert not COLLECTOR.paused
    assert not COLLECTOR.frozen and gc.get_freeze_count() == 0  # the run closed: thawed


def test_the_garbage_collector_is_on_again_when_a_big_open_is_abandoned(qtbot, tmp_path, settings):
    from taskloom.gui.collector import COLLECTOR

    sessions, path = open_big(tmp_path, settings, 3000)
    try:
        assert sessions.open(path)
        assert COLLECTOR.paused
        sessions.loading.window.close()  # the person closes the progress window
        assert not COLLECTOR.paused and sessions.current is None
    finally:
        sessions.close()


def test_the_bridges_snapshot_is_made_by_the_worker_unless_something_happened_since(
    qtbot, manual_scheduler
):
    """A big file's worker makes the bridge's snapshot and fold of every task (on the GUI
    thread they took ~0.6 s at 100,000 tasks); an event after it: made afresh."""
    from taskloom.gui.bridge import EarlyEvents, EngineBridge

    early = EarlyEvents()
    early.attach(manual_scheduler)
    for i in range(20):
        manual_scheduler.schedule(_noop, 3600.0, name=f"t{i}")
    qtbot.waitUntil(lambda: early.last_seq >= 20)
    early.prepare(manual_scheduler)
    bridge = EngineBridge(manual_scheduler, early=early)
    assert bridge.prepared and len(bridge.tasks) == len(bridge.fold) == 20
    assert bridge.snapshot_seq == manual_scheduler.snapshot()[0]
    bridge.close()

    early = EarlyEvents()
    early.attach(manual_scheduler)
    early.prepare(manual_scheduler)
    manual_scheduler.schedule(_noop, 3600.0, name="late")  # after the snapshot
    qtbot.waitUntil(lambda: early.last_seq > 20)
    bridge = EngineBridge(manual_scheduler, early=early)
    assert not bridge.prepared and "late" in bridge.tasks and len(bridge.tasks) == 21
    assert early.take_prepared() is None  # taken once
    bridge.close()
