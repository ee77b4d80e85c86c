"""The window under a flood: a batch of new tasks costs the views work per task added,
not per task shown. Counts, not times, with a real Scheduler and window offscreen."""

from __future__ import annotations

import sys
import threading
from collections import deque

from PySide6.QtWidgets import QApplication

from taskloom.engine import TaskInfo, TaskState
from taskloom.gui.background import LatestWorker
from taskloom.gui.structure import StructureChange, StructureDelta
from taskloom.gui.task_list import TaskList
from taskloom.gui.timeline._common import GROUP_LANE
from taskloom.gui.timeline.model import TimelineModel

S = TaskState


def noop():
    return None


def info(tid: str, deps=(), state=S.PENDING) -> TaskInfo:
    return TaskInfo(tid, tid, state, tuple(deps), (), 0, 0, None, False, False, None)


def python_calls_in(module_file: str, work) -> int:
    """Python calls into ``module_file`` on this thread while ``work()`` runs."""
    calls = 0

    def profile(frame, event, _arg):
        nonlocal calls
        if event == "call" and frame.f_code.co_filename == module_file:
            calls += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


def test_a_window_of_ten_thousand_takes_ten_new_tasks_without_rebuilding(
    qtbot, make_window, manual_scheduler
):
    for i in range(10_000):
        manual_scheduler.add(noop, name=f"g{i % 10}.t{i}")
    window = make_window(manual_scheduler)
    model = window.task_list.model
    qtbot.waitUntil(lambda: model.rowCount() == 10_000, timeout=30_000)
    scene = window.scene
    qtbot.waitUntil(lambda: not scene.view_pending and bool(scene.group_items), timeout=30_000)
    resets, rebuilds, recounts = model.resets, window.notices.rebuilds, scene.group_recounts
    sizes: list[int] = []
    real = window.timeline.model.set_tasks
    window.timeline.model.set_tasks = lambda tasks: (sizes.append(len(tasks)), real(tasks))[1]

    for j in range(10):
        manual_scheduler.add(noop, name=f"g3.new{j}")
    qtbot.waitUntil(lambda: model.rowCount() == 10_010, timeout=30_000)
    group = scene.group_items["\x01group:g3"]
    qtbot.waitUntil(lambda: group.total == 1010, timeout=30_000)

    assert model.resets == resets  # ten rows inserted, not 10,010 rebuilt
    assert [model.ids[model.row_of[f"g3.new{j}"]] for j in range(10)] == [
        f"g3.new{j}" for j in range(10)
    ]
    assert model.ids == sorted(model.ids)
    assert window.notices.rebuilds == rebuilds  # the ten counted alone
    assert {f"g3.new{j}" for j in range(10)} <= window.notices._unsettled
    assert scene.group_recounts == recounts  # g3 counted its ten new members only
    assert group.counts == {S.READY: 1010}
    assert sizes and max(sizes) <= 10  # the timeline read the batch, not every task


def test_a_row_added_to_a_shown_list_of_twenty_thousand_costs_no_python_per_row(qtbot):
    tasks = {f"t{i:05d}": info(f"t{i:05d}") for i in range(20_000)}
    panel = TaskList()
    qtbot.addWidget(panel)
    panel.resize(300, 400)
    panel.set_tasks(tasks)
    panel.show()
    qtbot.waitExposed(panel)
    QApplication.processEvents()
    module = sys.modules[TaskList.__module__].__file__
    assert module is not None
    tasks["t09999a"] = info("t09999a")

    def add_one() -> None:
        panel.apply_change(tasks, ["t09999a"], [])
        for _ in range(3):
            QApplication.processEvents()  # the list lays its rows out again

    calls = python_calls_in(module, add_one)
    # A list model in Python answered rowCount twice a row here: 40,000 calls.
    assert calls < 2_000
    assert panel.model.row_of["t09999a"] == 10_000
    assert "t09999a" in panel.model.index(10_000, 0).data()
    assert panel.model.resets == 1
    panel.apply_change(tasks | {}, [], [])  # nothing: nothing done
    del tasks["t00000"]
    panel.apply_change(tasks, [], ["t00000"])
    assert panel.model.rowCount() == 20_000 and "t00000" not in panel.model.row_of


def test_new_lanes_fold_in_one_by_one_under_collapsed_groups():
    model = TimelineModel()
    model.set_tasks({f"t{i}": info(f"t{i}") for i in range(10_000)})
    model.set_lane_groups(lambda tid: "odd" if int(tid[1:]) % 2 else None)
    assert model.group_sizes == {"odd": 5000}
    folds = []
    real = model._fold_groups
    model._fold_groups = lambda: (folds.append(1), real())[1]

    model.set_tasks({f"t{i}": info(f"t{i}") for i in range(10_000, 10_010)})

    assert folds == []  # all 10,010 lanes not gathered again
    assert model.folds_new == 1
    assert model.group_sizes == {"odd": 5005}
    lanes = model.grouped_lanes
    assert lanes is not None and lanes[-5:] == [f"t{i}" for i in range(10_000, 10_010, 2)]
    assert len(lanes) == 5000 + 1 + 5


def test_a_group_lane_of_hundreds_of_touching_bars_paints_a_few(qtbot):
    from taskloom.gui.timeline import Timeline

    timeline = Timeline(lambda: 1000.0)
    qtbot.addWidget(timeline)
    timeline.resize(800, 300)
    timeline.show()
    model, canvas = timeline.model, timeline.canvas
    timeline.set_tasks({f"t{i}": info(f"t{i}") for i in range(500)})
    timeline.set_lane_groups(lambda tid: "flood")
    now = 1000.0
    bars = model.group_bars.setdefault("flood", deque(maxlen=400))
    for i in range(399):  # a flood: hundreds of 1 ms attempts within a second
        start = now - 1.0 + i * 0.0025
        bars.append((f"t{i}", [start, start + 0.001, "succeeded", 1]))
    bars.append(("t499", [now - 0.5, None, "running", 1]))
    canvas.group_segments = 0
    canvas.grab()  # one paint

    assert 1 <= canvas.group_segments <= 4  # was one rectangle a bar: 400
    tips = [tip for _rect, _tid, tip in canvas._hits if "attempt" in tip]
    assert any(tip.startswith("399 attempts succeeded") for tip in tips), tips
    assert any(tip == "t499 attempt 1: running" for tip in tips), tips


def test_changes_gathered_over_batches_cancel_out():
    delta = StructureDelta()
    delta.take(StructureChange(added=("a", "b", "c")))
    delta.take(StructureChange(removed=("b", "x")))
    delta.take(StructureChange(edges_added=(("a", "c"),), changed=("a",)))
    delta.take(StructureChange(added=("x",)))  # removed and back: read again
    assert list(delta.added) == ["a", "c"]
    assert list(delta.removed) == []
    assert set(delta.changed) == {"a", "c", "x"}
    assert set(delta.touched()) == {"a", "c", "x"}


def test_the_background_worker_starts_once_and_runs_the_newest_job():
    worker = LatestWorker("taskloom-test-worker")
    release, ran, done = threading.Event(), [], threading.Event()

    def first() -> None:
        release.wait(10)
        ran.append("first")

    worker.submit(first)
    worker.submit(lambda: ran.append("second"))  # replaced before it began
    worker.submit(lambda: (ran.append("third"), done.set()))
    release.set()
    assert done.wait(10)
    assert ran in (["first", "third"], ["third"])  # never "second"
    assert worker.dropped >= 1
    again = threading.Event()
    worker.submit(again.set)
    assert again.wait(10)
    assert worker.starts == 1  # the same thread, no new one per job


def test_find_reads_the_task_names_again_only_when_it_gets_the_focus(
    qtbot, make_window, manual_scheduler
):
    from PySide6.QtCore import QEvent, Qt
    from PySide6.QtGui import QFocusEvent

    for i in range(50):
        manual_scheduler.add(noop, name=f"t{i}")
    window = make_window(manual_scheduler)
    names = window.search_names
    qtbot.waitUntil(lambda: len(window.scene.nodes) == 50)
    reads = names.reads
    for j in range(30):  # batches of new tasks with Find unused: no pass over the names
        manual_scheduler.add(noop, name=f"new{j}")
        qtbot.waitUntil(lambda j=j: f"new{j}" in window.document.tasks)
    assert names.reads == reads
    focus = QFocusEvent(QEvent.Type.FocusIn, Qt.FocusReason.ShortcutFocusReason)
    QApplication.sendEvent(window.search, focus)  # Ctrl+F
    assert names.reads == reads + 1
    assert names.stringList() == sorted(window.document.tasks)
    QApplication.sendEvent(window.search, focus)  # nothing new: not read again
    assert names.reads == reads + 1


def test_a_big_batch_of_new_rows_is_merged_in_without_a_pass_over_every_task(qtbot):
    class Tasks(dict):
        passes = 0

        def __iter__(self):  # sorted(tasks), dict(tasks): a pass over every task
            Tasks.passes += 1
            return super().__iter__()

    tasks = Tasks({f"t{i:05d}": info(f"t{i:05d}") for i in range(10_000)})
    panel = TaskList()
    qtbot.addWidget(panel)
    panel.set_tasks(dict(tasks))
    new = [f"t{i:05d}x" for i in range(0, 10_000, 50)]  # 200, spread over the list
    for tid in new:
        tasks[tid] = info(tid)
    del tasks["t00001"]
    Tasks.passes = 0
    panel.apply_change(tasks, new, ["t00001"])
    assert Tasks.passes == 0
    model = panel.model
    assert model.ids == sorted(tasks) and model.rowCount() == len(tasks) == 10_199
    assert model.row_of["t00050x"] == 51  # t00000, t00000x, t00002..t00050, then it
    assert "t00050x" in model.index(51, 0).data() and "t00001" not in model.row_of


def test_a_resting_worker_leaves_as_long_as_a_job_took_before_the_next():
    import time

    worker = LatestWorker("taskloom-test-rest", rest=1.0)
    spans: list[tuple[float, float]] = []
    busy = threading.Event()
    done = threading.Event()

    def job(last: bool = False) -> None:
        began = time.monotonic()
        busy.set()
        while time.monotonic() - began < 0.05:  # 50 ms of work (the GIL held)
            pass
        spans.append((began, time.monotonic()))
        if last:
            done.set()

    worker.submit(job)
    assert busy.wait(10)
    for _ in range(5):  # batches while it works: only the newest runs, after a rest
        worker.submit(job)
    worker.submit(lambda: job(last=True))
    assert done.wait(10)
    assert len(spans) == 2
    (first_began, first_ended), (second_began, _) = spans
    assert second_began - first_ended >= 0.9 * (first_ended - first_began)
    assert worker.dropped == 5


class _CountedLanes(list):
    """A lane list that counts the passes over it."""

    passes = 0

    def __iter__(self):
        self.passes += 1
        return super().__iter__()


def test_the_lanes_shown_among_50000_are_found_without_a_pass_over_every_lane():
    """Expand all on 50,000 tasks refreshed the shown lanes by walking all of them at
    every dirty tick (30-90 ms each); the few that have something to show are sorted by
    their place instead, in the same order as the walk gives."""
    model = TimelineModel()
    model.set_tasks({f"t{i}": info(f"t{i}") for i in range(50_000)})
    model.set_lane_groups(lambda tid: "tail" if int(tid[1:]) >= 49_000 else None)
    for tid in ("t31", "t7", "t49500", "t20000"):  # t49500 is folded into its group
        model.entries[tid] = []
    expected = [
        lane
        for lane in (model.grouped_lanes or ())
        if lane in {"t31", "t7", "t20000", "t5"} or lane.startswith(GROUP_LANE)
    ]
    lanes = model.grouped_lanes = _CountedLanes(model.grouped_lanes or ())
    assert model.refresh_active(selected="t5")
    assert lanes.passes == 0
    group_lanes = [lane for lane in expected if lane not in {"t31", "t7", "t20000", "t5"}]
    assert len(group_lanes) == 1
    assert model.active_lanes == ["t5", "t7", "t31", "t20000", *group_lanes] == expected
    model.set_lane_groups(None)  # no groups: the task lanes' own places
    assert model.refresh_active() and model.active_lanes == ["t7", "t31", "t20000", "t49500"]
