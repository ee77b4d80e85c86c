"""Big workflows (issue 25): what the window does on every selection and batch does not
scan every task (real engine, real window offscreen)."""

from __future__ import annotations

from taskloom.engine import TaskInfo
from taskloom.engine import TaskState as S


def noop() -> None:
    pass


def fail() -> None:
    raise RuntimeError("no")


class CountingTasks(dict):
    """The bridge's task table, counting the walks over all of it."""

    walks = 0

    def __iter__(self):
        CountingTasks.walks += 1
        return super().__iter__()

    def values(self):
        CountingTasks.walks += 1
        return super().values()

    def items(self):
        CountingTasks.walks += 1
        return super().items()


def test_selecting_in_a_run_with_nothing_settled_walks_no_task_table(
    qtbot, make_window, manual_scheduler
):
    for i in range(300):
        manual_scheduler.schedule(noop, 3600.0, name=f"t{i}")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: len(window.bridge.tasks) == 300)
    window.bridge.tasks = CountingTasks(window.bridge.tasks)
    window.bridge.state_counts()  # counted once per batch that changed a state
    CountingTasks.walks = 0
    window.select_tasks(["t7"])
    window._update_actions()
    assert window.selected == ["t7"]
    assert CountingTasks.walks == 0  # Run again and Retry failed answered from the counts
    assert not window.act_clear_all.isEnabled() and not window.act_retry_failed.isEnabled()


def test_run_again_and_retry_failed_follow_the_counts(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="done")
    manual_scheduler.add(fail, name="broken")
    manual_scheduler.schedule(noop, 3600.0, name="later")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    manual_scheduler.clock.advance(0)
    qtbot.waitUntil(lambda: window.bridge.tasks["broken"].state is S.FAILED)
    qtbot.waitUntil(lambda: window.bridge.tasks["done"].state is S.SUCCEEDED)
    window.select_tasks(["later"])
    window._update_actions()
    assert window.act_clear_all.isEnabled() and window.act_retry_failed.isEnabled()


def test_the_search_index_answers_as_the_walk_did():
    from taskloom.gui.graph.grouped_scene import SearchIndex

    def info(tid, name=None):
        return TaskInfo(tid, name or tid, S.PENDING, (), (), 0, 0, None, False, False, None)

    tasks = {
        "b2": info("b2", "Load"),
        "a10": info("a10", "extract.orders"),
        "a9": info("a9", "extract"),
        "LOAD": info("LOAD"),
    }
    index = SearchIndex(tasks)
    assert index.find("load") == "b2"  # its name, exactly: the first in the table
    assert index.find("a9") == "a9"
    assert index.find("extract") == "a9"  # a9's name is "extract"
    assert index.find("orders") == "a10"
    assert index.find("a") == "LOAD"  # contained: the first id in sorted order
    assert index.find("0") == "a10"
    assert index.find("zz") is None


def big_window(qtbot, tmp_path, settings, n: int):
    from benchmarks.big_workflows import write_dag
    from taskloom.engine import Scheduler
    from taskloom.engine.workflow import load
    from taskloom.gui.main_window import MainWindow

    workflow = load(write_dag(n, tmp_path))
    scheduler = Scheduler(workers=1)
    workflow.schedule_into(scheduler)
    window = MainWindow(scheduler, settings=settings, workflow=workflow, started=False)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(window.scene.is_drawn, timeout=30000)
    return window, scheduler


def test_find_in_a_big_graph_answers_from_the_index_made_off_the_gui_thread(
    qtbot, monkeypatch, tmp_path, settings
):
    from taskloom.gui.graph import grouped_scene

    window, scheduler = big_window(qtbot, tmp_path, settings, 3000)
    try:
        scene = window.scene
        worked: list[str] = []
        assign_groups, index = grouped_scene.assign_groups, grouped_scene.SearchIndex

        def counting_assign(*args):
            worked.append("groups")
            return assign_groups(*args)

        def counting_index(*args):
            worked.append("index")
            return index(*args)

        monkeypatch.setattr(grouped_scene, "assign_groups", counting_assign)
        monkeypatch.setattr(grouped_scene, "SearchIndex", counting_index)
        scene.tasks = CountingTasks(scene.tasks)
        CountingTasks.walks = 0
        assert scene.find_task("t1507") == (True, "t1507")
        assert scene.find_task("t150") == (True, "t150")
        assert CountingTasks.walks == 0  # no walk of the 3,000 tasks on the GUI thread
        target = "t1507"
        assert scene.group_of(target) in scene.collapsed
        window.search.setText("T1507")
        window._find()
        qtbot.waitUntil(lambda: window.selected == [target], timeout=30000)
        assert target in scene.nodes and scene.nodes[target].isVisible()
        # opening the group worked out only the view: the groups, the edge graph and
        # Find's index of these same tasks were kept
        assert worked == []

        # a new task: the index is not of these tasks any more; Find walks them
        extra = scheduler.add(noop, name="extra.one", deps=["t3"])
        qtbot.waitUntil(lambda: extra in scene.tasks, timeout=30000)
        assert scene.find_task("extra.one") == (False, None)
        assert window.graph_view.find("EXTRA.ONE") == extra
    finally:
        window.close()
        scheduler.shutdown(wait=True)


def test_the_last_moves_and_showing_every_item_take_slices_of_their_own(
    qtbot, monkeypatch, tmp_path, settings
):
    from taskloom.gui.graph import scene as scene_module

    slices: list[tuple[int, bool]] = []  # (items placed, layout finished) per slice
    move_slice = scene_module.GraphScene._move_slice
    announced: list[int] = []  # slices the layout's listeners ran in

    def recorded(self, *args, **kw):
        before = len(self._move_job or ())
        move_slice(self, *args, **kw)
        slices.append((before - len(self._move_job or ()), self._move_job is None))

    monkeypatch.setattr(scene_module.GraphScene, "_move_slice", recorded)
    window, scheduler = big_window(qtbot, tmp_path, settings, 3000)
    try:
        slices.clear()
        window.scene.layoutApplied.connect(lambda: announced.append(len(slices)))
        window.search.setText("t1507")
        window._find()
        qtbot.waitUntil(lambda: window.selected == ["t1507"], timeout=30000)
        assert slices and slices[-1][1]  # the layout was applied in slices, and finished
        # no slice placed items and also showed, indexed and announced them all
        assert not [s for s in slices if s[0] > 0 and s[1]]
        # and the layout's listeners (the found task selected, centred) ran after the
        # slice that showed every item had returned, not inside it
        assert announced and announced[-1] == len(slices) and window.selected == ["t1507"]
    finally:
        window.close()
        scheduler.shutdown(wait=True)


def test_the_runs_grid_is_not_made_afresh_when_its_read_brings_nothing_new(
    qtbot, make_window, manual_scheduler
):
    from taskloom.gui.runs_view import Cell, RunsGrid, RunsView

    for i in range(50):
        manual_scheduler.schedule(noop, 3600.0, name=f"t{i}")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: len(window.document.tasks) == 50)
    view = RunsView(window, None)
    qtbot.addWidget(view)
    grid = RunsGrid([1], {("t3", 1): Cell("succeeded", 1.5, 1, 1, None)}, {1: 1.5}, {1: 0})
    view.show_grid(grid)
    first, label = view.item(3, 0), view.verticalHeaderItem(3)
    assert first.text().startswith("✓") and label.text() == "t3"
    view.show_grid(RunsGrid([1], dict(grid.cells), {1: 1.5}, {1: 0}))  # read again, the same
    assert view.item(3, 0) is first and view.verticalHeaderItem(3) is label
    other = view.item(4, 0)
    view.show_grid(grid._replace(cells={("t3", 1): Cell("failed", 2.0, 1, 1, "boom")}))
    assert view.item(3, 0).text().startswith("✗")  # a new answer: the cells again
    assert view.verticalHeaderItem(3) is label  # the same tasks: the same row labels
    assert view.item(4, 0) is other  # a cell whose attempt is the same is kept
    view.show_grid(RunsGrid([1, 2], {("t3", 2): Cell("running", None, 1, 1, None)}, {}, {}))
    assert view.item(3, 0).text() == "" and view.item(3, 1).text() == "▶ …"  # runs: all again


def test_a_renamed_task_is_found_by_its_new_name_before_the_index_is_made_again(qtbot):
    from taskloom.gui.graph.scene import GraphScene
    from taskloom.gui.graph.view import GraphView

    def info(tid, name, deps=()):
        return TaskInfo(tid, name, S.PENDING, deps, (), 0, 0, None, False, False, None)

    scene = GraphScene()
    view = GraphView(scene)
    qtbot.addWidget(view)
    scene.set_tasks({"a": info("a", "fetch"), "b": info("b", "parse", ("a",))})
    qtbot.waitUntil(scene.is_drawn)
    assert scene.find_task("parse") == (True, "b")
    assert not scene.update_tasks({"b": info("b", "tidy", ("a",))})  # not a relayout
    assert scene.find_task("tidy") == (False, None)  # the index is of the old names
    assert view.find("TIDY") == "b" and view.find("parse") is None
    scene.collapse_all()  # a regroup: the renamed tasks' index is made again, not kept
    qtbot.waitUntil(scene.is_drawn)
    assert scene.find_task("tidy") == (True, "b")


def test_the_runs_grid_makes_no_row_per_task_before_any_run(qtbot, make_window, manual_scheduler):
    from taskloom.gui.runs_view import Cell, RunsGrid, RunsView

    for i in range(50):
        manual_scheduler.schedule(noop, 3600.0, name=f"t{i}")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: len(window.document.tasks) == 50)
    view = RunsView(window, None)
    qtbot.addWidget(view)
    view.show_grid(RunsGrid([], {}, {}, {}))  # a file just opened: nothing ran
    assert view.rowCount() == 0 and view.columnCount() == 0
    view.show_grid(RunsGrid([1], {("t3", 1): Cell("succeeded", 1.5, 1, 1, None)}, {1: 1}, {1: 0}))
    assert view.rowCount() == 50 and view.verticalHeaderItem(3).text() == "t3"


def test_a_costly_runs_grid_is_read_again_less_often(qtbot, make_window, manual_scheduler):
    """The Runs grid's next read waits pacing.COST_FACTOR times what the last one took
    from asking to its cells shown, when that is longer than REFRESH_MS."""
    import time

    from PySide6.QtCore import QObject, Signal

    from taskloom.gui import runs_view
    from taskloom.gui.pacing import COST_FACTOR
    from taskloom.gui.runs_view import Cell, RunsGrid, RunsView

    class Reader(QObject):
        gridRead = Signal(int, object)
        closed = False

        def request_grid(self):
            return 7

    manual_scheduler.schedule(noop, 3600.0, name="t3")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    view = RunsView(window, Reader())
    qtbot.addWidget(view)
    grid = RunsGrid([1], {("t3", 1): Cell("succeeded", 1.5, 1, 1, None)}, {1: 1.5}, {1: 0})
    view.request()
    view._answered(7, grid)  # answered at once: the usual pace
    assert view._timer.interval() == runs_view.REFRESH_MS
    view.request()
    view._asked_at = time.monotonic() - 0.5  # this read took half a second
    view._answered(7, grid._replace(took={1: 2.0}))
    assert view._timer.interval() >= COST_FACTOR * 500
