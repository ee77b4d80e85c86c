"""Groups (semantic zoom) and filters of the graph: big graphs stay readable."""

from __future__ import annotations

from PySide6.QtCore import Qt

from taskloom.engine import TaskInfo, TaskState
from taskloom.gui.graph.filters import GraphFilter, downstream_of, upstream_of
from taskloom.gui.graph.groups import (
    assign_groups,
    build_view,
    group_rep,
    layer_bands,
    layers_of,
    natural_key,
    prefix_group,
)
from taskloom.gui.graph.scene import GraphScene
from taskloom.gui.graph.view import DETAIL_SCALE, GraphView

S = TaskState


def graph(edges, nodes=(), states=None):
    """{id: TaskInfo} with deps and dependents filled in from (upstream, downstream)."""
    deps: dict[str, list[str]] = {n: [] for n in nodes}
    below: dict[str, list[str]] = {n: [] for n in nodes}
    for up, down in edges:
        for n in (up, down):
            deps.setdefault(n, [])
            below.setdefault(n, [])
        deps[down].append(up)
        below[up].append(down)
    states = states or {}
    return {
        t: TaskInfo(
            t,
            t,
            states.get(t, S.PENDING),
            tuple(deps[t]),
            tuple(below[t]),
            0,
            0,
            None,
            False,
            False,
            None,
        )
        for t in deps
    }


def two_stages(n=200):
    """``extract.i`` -> ``load.i`` for i < n: 2n tasks in two prefix groups."""
    return graph([(f"extract.{i}", f"load.{i}") for i in range(n)])


# -- plain logic ------------------------------------------------------------------------
def test_a_task_groups_by_its_file_key_else_its_name_prefix():
    assert prefix_group("etl.extract") == "etl"
    assert prefix_group("daily/report.pdf") == "daily"
    assert prefix_group("t7") is None
    assert prefix_group(".hidden") is None  # no empty group name
    tasks = graph([], nodes=["etl.a", "b"])
    assert assign_groups(tasks) == {"etl.a": "etl"}
    assert assign_groups(tasks, {"b": "mine"}.get) == {"etl.a": "etl", "b": "mine"}


def test_names_sort_naturally():
    names = ["task-10", "task-2", "Task-1", "task-2b"]
    assert sorted(names, key=natural_key) == ["Task-1", "task-2", "task-2b", "task-10"]


def test_layers_are_linear_and_big_ungrouped_graphs_band_by_layer():
    chain = {f"t{i}": ([f"t{i - 1}"] if i else []) for i in range(1000)}
    assert layers_of(chain)["t999"] == 999
    bands = layer_bands(layers_of(chain), bands=4)
    assert len(set(bands.values())) == 4
    assert bands["t0"] == "layers 1–250" and bands["t999"] == "layers 751–1000"
    # One huge layer (independent tasks) is cut into parts, in natural name order.
    flat = layer_bands({f"t{i}": 0 for i in range(1000)}, bands=4)
    assert flat["t0"] == flat["t249"] == "layer 1, part 1"
    assert flat["t999"] == "layer 1, part 4"


def test_a_collapsed_group_is_one_node_and_edges_bundle_with_a_count():
    tasks = two_stages(5)
    groups = assign_groups(tasks)
    view = build_view(tasks, groups, collapsed={"extract", "load"})
    assert set(view.members) == {group_rep("extract"), group_rep("load")}
    assert view.edges == {(group_rep("extract"), group_rep("load")): 5}
    half = build_view(tasks, groups, collapsed={"load"})
    assert half.edges[("extract.3", group_rep("load"))] == 1
    assert len(half.tasks_shown) == 5


def test_filters_by_state_with_what_they_block_by_text_and_around_tasks():
    tasks = graph([("a", "b"), ("b", "c"), ("x", "y")], states={"b": S.FAILED, "y": S.FAILED})
    assert GraphFilter().shown(tasks) is None  # no filter: everything
    failed = GraphFilter(states=frozenset({S.FAILED}))
    assert failed.shown(tasks) == {"b", "c", "y"}
    only = GraphFilter(states=frozenset({S.FAILED}), with_blocked=False)
    assert only.shown(tasks) == {"b", "y"}
    assert GraphFilter(text="X").shown(tasks) == {"x"}
    assert GraphFilter(around=("b",)).shown(tasks) == {"a", "b", "c"}
    assert upstream_of(tasks, ["c"]) == {"a", "b", "c"}
    assert downstream_of(tasks, ["a"]) == {"a", "b", "c"}


# -- the scene -------------------------------------------------------------------------
def test_a_big_graph_starts_collapsed_and_groups_expand_and_collapse(qtbot):
    scene = GraphScene()
    with qtbot.waitSignal(scene.layoutApplied, timeout=10_000):
        scene.set_tasks(two_stages(200))  # 400 tasks: above the collapse size
    qtbot.waitUntil(scene.is_drawn, timeout=10_000)
    assert scene.nodes == {} and set(scene.group_items) == {
        group_rep("extract"),
        group_rep("load"),
    }
    load = scene.group_items[group_rep("load")]
    assert load.total == 200 and load.counts == {S.PENDING: 200}
    assert scene.view_model.edges == {(group_rep("extract"), group_rep("load")): 200}
    assert not scene.bundle_counts.path().isEmpty()  # "200" written on the bundled edge

    scene.expand("load")
    qtbot.waitUntil(scene.is_drawn, timeout=10_000)
    assert len(scene.nodes) == 200 and set(scene.group_items) == {group_rep("extract")}
    assert all(scene.nodes[t].isVisible() for t in scene.nodes)
    scene.collapse("load")
    qtbot.waitUntil(scene.is_drawn, timeout=10_000)
    assert scene.nodes == {} and len(scene.group_items) == 2


def test_state_changes_update_a_groups_bar_without_a_relayout(qtbot):
    scene = GraphScene()
    scene.collapse_above = 0  # collapse even this small graph
    tasks = two_stages(3)
    scene.set_tasks(tasks)
    layout = scene.layout
    changed = {"load.1": tasks["load.1"]._replace(state=S.FAILED)}
    assert scene.update_tasks(changed) is False
    assert scene.group_items[group_rep("load")].counts == {S.PENDING: 2, S.FAILED: 1}
    assert "✗1" in scene.group_items[group_rep("load")].count_text.text()
    assert scene.layout is layout


def test_a_filter_shows_failed_tasks_and_what_they_block(qtbot):
    scene = GraphScene()
    tasks = graph([("a", "b"), ("b", "c"), ("x", "y")], states={"b": S.FAILED})
    scene.set_tasks(tasks)
    assert set(scene.nodes) == {"a", "b", "c", "x", "y"}
    scene.set_filter(GraphFilter(states=frozenset({S.FAILED})))
    assert set(scene.nodes) == {"b", "c"}
    # A new failure enters the filter: a structure change for the window to apply.
    assert scene.update_tasks({"x": tasks["x"]._replace(state=S.FAILED)}) is True
    scene.set_tasks(scene.tasks)
    assert set(scene.nodes) == {"b", "c", "x", "y"}
    scene.set_filter(GraphFilter())
    assert len(scene.nodes) == 5


def test_positions_stay_when_a_task_is_added(qtbot):
    scene = GraphScene()
    tasks = graph([("a", "b"), ("b", "c"), ("a", "d")])
    scene.set_tasks(tasks)
    before = {t: scene.nodes[t].pos() for t in tasks}
    scene.set_tasks(graph([("a", "b"), ("b", "c"), ("a", "d"), ("c", "e"), ("z", "b")]))
    assert {t: scene.nodes[t].pos() for t in tasks} == before
    assert {"e", "z"} <= set(scene.nodes)


def test_a_task_added_to_a_collapsed_group_moves_nothing(qtbot):
    scene = GraphScene()
    scene.collapse_above = 0
    scene.set_tasks(two_stages(3))
    where = {rep: item.pos() for rep, item in scene.group_items.items()}
    layout = scene.layout
    scene.set_tasks(graph([(f"extract.{i}", f"load.{i}") for i in range(4)]))
    assert {rep: item.pos() for rep, item in scene.group_items.items()} == where
    assert scene.layout is layout  # same groups, same bundled edges: no relayout
    assert scene.group_items[group_rep("load")].total == 4


# -- the view ----------------------------------------------------------------------------
def show_view(qtbot, scene, width=800, height=500):
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_double_click_expands_a_group_and_minus_collapses_it(qtbot):
    scene = GraphScene()
    scene.collapse_above = 0
    scene.set_tasks(two_stages(3))
    view = show_view(qtbot, scene)
    view.fit()
    item = scene.group_items[group_rep("load")]
    point = view.mapFromScene(item.sceneBoundingRect().center())
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: "load.0" in scene.nodes, timeout=5000)
    assert group_rep("load") not in scene.group_items
    view.select(["load.1"])
    qtbot.keyClick(view, Qt.Key.Key_Minus)
    assert group_rep("load") in scene.group_items and "load.1" not in scene.nodes
    # + expands the selected group again.
    qtbot.mouseClick(
        view.viewport(),
        Qt.MouseButton.LeftButton,
        pos=view.mapFromScene(scene.group_items[group_rep("load")].sceneBoundingRect().center()),
    )
    assert scene.selected_group == "load"
    qtbot.keyClick(view, Qt.Key.Key_Plus)
    assert "load.1" in scene.nodes


def test_find_opens_the_group_of_the_task_it_finds(qtbot):
    scene = GraphScene()
    scene.collapse_above = 0
    scene.set_tasks(two_stages(3))
    view = show_view(qtbot, scene)
    with qtbot.waitSignal(view.selectionChanged, timeout=5000) as selected:
        assert view.find("load.2") == "load.2"
    assert selected.args == [["load.2"]]
    assert "load.2" in scene.nodes and scene.selected == ["load.2"]


def test_a_fitted_view_of_eight_tasks_in_800px_shows_their_names(qtbot):
    scene = GraphScene()
    scene.set_tasks(graph([(f"step{i}", f"step{i + 1}") for i in range(7)]))
    view = show_view(qtbot, scene, 800, 500)
    view.fit()
    assert view.zoom_level() >= DETAIL_SCALE and scene.detail
    assert scene.nodes["step3"].name_text.isVisible()


def test_the_files_group_key_groups_in_the_window_and_save_keeps_it(
    qtbot, tmp_path, make_window, manual_scheduler
):
    from taskloom.engine.workflow import load

    source = tmp_path / "flow.toml"
    source.write_text(
        '[tasks.a]\ncommand = ["true"]\ngroup = "nightly"\n\n'
        '[tasks.b]\ncommand = ["true"]\ngroup = "nightly"\ndeps = ["a"]\n\n'
        '[tasks."etl.c"]\ncommand = ["true"]\ndeps = ["b"]\n',
        encoding="utf-8",
    )
    workflow = load(source)
    workflow.schedule_into(manual_scheduler)
    window = make_window(manual_scheduler)
    window.attach_workflow(workflow)
    window._on_structure()
    scene = window.scene
    assert scene.groups == {"a": "nightly", "b": "nightly", "etl.c": "etl"}
    scene.collapse("nightly")
    assert set(scene.group_items) == {group_rep("nightly")} and set(scene.nodes) == {"etl.c"}
    assert scene.view_model.edges == {(group_rep("nightly"), "etl.c"): 1}
    target = tmp_path / "saved.toml"
    assert window.save_workflow(str(target))
    assert load(target).tasks["b"].group == "nightly"


def test_the_filter_bar_filters_the_windows_graph(qtbot, make_window, manual_scheduler):
    def fail():
        raise RuntimeError("no")

    manual_scheduler.add(fail, name="a")
    manual_scheduler.add(lambda: None, name="b", deps=["a"])
    manual_scheduler.add(lambda: None, name="c")
    manual_scheduler.start()
    manual_scheduler.wait(5)
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["a"].state is S.FAILED, timeout=5000)
    window._on_structure()
    bar, scene = window.filter_bar, window.scene
    bar.states.setCurrentIndex(1)  # failed and what they block
    assert scene.filter.states == {S.FAILED} and set(scene.nodes) == {"a", "b"}
    bar.states.setCurrentIndex(2)  # failed only
    assert set(scene.nodes) == {"a"}
    bar.states.setCurrentIndex(0)
    with qtbot.waitSignal(bar.filterChanged, timeout=2000):
        bar.text.setText("C")  # applied once the typing pauses
    assert set(scene.nodes) == {"c"}
    bar.text.clear()
    qtbot.waitUntil(lambda: len(scene.nodes) == 3, timeout=2000)
    window.select_tasks(["b"])
    bar.around.setChecked(True)
    assert set(scene.nodes) == {"a", "b"}
    bar.around.setChecked(False)
    assert len(scene.nodes) == 3


def test_expanding_a_group_lays_out_afresh_without_overlaps(qtbot):
    scene = GraphScene()
    scene.collapse_above = 0
    tasks = graph(
        [("src.a", f"wide.{i}") for i in range(30)]
        + [(f"wide.{i}", "end.z") for i in range(30)]
        + [("src.a", "src.b"), ("end.z", "end.y")]
    )
    scene.set_tasks(tasks)
    scene.expand("wide")
    boxes = [
        item.sceneBoundingRect() for item in [*scene.nodes.values(), *scene.group_items.values()]
    ]
    assert len(boxes) == 32
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.adjusted(2, 2, -2, -2).intersects(b), (a, b)


def test_status_bar_and_run_summary_count_the_same_batch(qtbot, make_window, manual_scheduler):
    for i in range(3):
        manual_scheduler.add(lambda: None, name=f"t{i}")
    window = make_window(manual_scheduler)
    window._status_timer.stop()  # only the batch may update the status bar
    manual_scheduler.start()
    manual_scheduler.wait(5)
    window.bridge.drain()  # one batch: three tasks ran
    assert "3 succeeded" in window.status_panel.counts.text()
    assert "&nbsp;3</td><td>&nbsp;succeeded" in window.inspector.summary.text()


def test_the_timeline_has_one_lane_per_collapsed_group(qtbot, make_window, manual_scheduler):
    from taskloom.gui.timeline import GROUP_LANE

    for group in ("load", "extract"):
        for i in range(160):  # 320 tasks: the window opens with its groups collapsed
            manual_scheduler.add(lambda: None, name=f"{group}.{i}")
    window = make_window(manual_scheduler)
    qtbot.waitUntil(window.scene.is_drawn, timeout=5000)
    lanes = window.timeline.model.visible_lanes()
    assert sorted(lanes) == [GROUP_LANE + "extract", GROUP_LANE + "load"]
    window.scene.expand("load")
    qtbot.waitUntil(window.scene.is_drawn, timeout=5000)
    model = window.timeline.model
    assert model.grouped_lanes[0] == GROUP_LANE + "extract"
    assert "load.7" in model.grouped_lanes and len(model.grouped_lanes) == 161


def test_layers_of_tasks_in_order_and_out_of_order_are_the_longest_paths():
    """A file's tasks come after their dependencies (one pass); any other order, unknown
    dependencies and a cycle take the general walk: the same layers either way."""
    import random

    import networkx as nx

    rng = random.Random(25)
    tasks = {}
    for i in range(2000):
        deps = {f"t{rng.randrange(i)}" for _ in range(rng.randint(0, 3))} if i else set()
        tasks[f"t{i}"] = [*sorted(deps), "gone"]  # "gone": not a task, ignored
    graph = nx.DiGraph()
    graph.add_nodes_from(tasks)
    graph.add_edges_from((d, t) for t, deps in tasks.items() for d in deps if d in tasks)
    expected = {t: n for n, layer in enumerate(nx.topological_generations(graph)) for t in layer}
    assert layers_of(tasks) == expected
    shuffled = list(tasks.items())
    rng.shuffle(shuffled)
    assert layers_of(dict(shuffled)) == expected
    # a cycle: the tasks on it come after their last known layer
    assert layers_of({"a": [], "b": ["a", "c"], "c": ["b"]}) == {"a": 0, "b": 1, "c": 2}


def test_the_graphs_edges_are_made_as_networkx_would_make_them():
    import networkx as nx

    from taskloom.gui.graph.grouped_scene import digraph_of

    tasks = graph([("a", "b"), ("a", "c"), ("b", "c"), ("e", "d")])
    # a repeated and an unknown dependency
    tasks["b"] = tasks["b"]._replace(deps=("a", "a", "gone"))
    made, count = digraph_of(tasks)
    expected = nx.DiGraph()
    expected.add_nodes_from(tasks)
    expected.add_edges_from((d, t) for t, i in tasks.items() for d in i.deps if d in tasks)
    assert nx.utils.graphs_equal(made, expected)
    assert count == made.number_of_edges() == 4
    assert list(made.edges) == list(expected.edges)
    assert sorted(made.predecessors("c")) == ["a", "b"] and list(made.successors("e")) == ["d"]
    made.add_edge("d", "a")  # still a graph networkx keeps
    assert made.has_edge("d", "a") and "d" in made.pred["a"]
