"""Layered layout, scene items and the graph view's zoom, search and level of detail."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
)

import taskloom.gui.graph.scene as scene_module
from taskloom.engine import TaskInfo, TaskState
from taskloom.gui.graph.items import ARROW_LENGTH, NodeItem
from taskloom.gui.graph.layout import LayoutCache, compute_layout, layered_positions, structure_key
from taskloom.gui.graph.scene import GraphScene
from taskloom.gui.graph.view import DETAIL_SCALE, GraphView
from taskloom.gui.style import STATE_COLOURS

S = TaskState


def info(tid, deps=(), state=S.PENDING, attempt=0, recurring=False):
    return TaskInfo(tid, tid, state, tuple(deps), (), 0, attempt, None, recurring, False, None)


def tasks_of(edges, nodes=()):
    deps = {}
    for n in nodes:
        deps.setdefault(n, [])
    for up, down in edges:
        deps.setdefault(up, [])
        deps.setdefault(down, []).append(up)
    return {t: info(t, d) for t, d in deps.items()}


def crossings(layers, edges):
    order = {n: (i, j) for i, layer in enumerate(layers) for j, n in enumerate(layer)}
    pairs = [(order[u], order[v]) for u, v in edges if order[v][0] == order[u][0] + 1]
    count = 0
    for a in range(len(pairs)):
        for b in range(a + 1, len(pairs)):
            (u1, v1), (u2, v2) = pairs[a], pairs[b]
            if u1[0] == u2[0] and (u1[1] - u2[1]) * (v1[1] - v2[1]) < 0:
                count += 1
    return count


def test_layers_go_upstream_left_to_downstream_right():
    layers = layered_positions("abcd", [("a", "b"), ("b", "c"), ("a", "d")])
    assert layers[0] == ["a"]
    assert set(layers[1]) == {"b", "d"}
    assert layers[2] == ["c"]
    layout = compute_layout("abcd", [("a", "b"), ("b", "c"), ("a", "d")])
    assert layout.positions["a"][0] < layout.positions["b"][0] < layout.positions["c"][0]


def test_barycenter_sweeps_remove_avoidable_crossings():
    # Sorted by name, a1->b2 and a2->b1 cross; the sweeps must untangle them.
    edges = [("a1", "z2"), ("a2", "z1"), ("a3", "z3")]
    naive = [["a1", "a2", "a3"], ["z1", "z2", "z3"]]
    assert crossings(naive, edges) == 1
    assert crossings(layered_positions(["a1", "a2", "a3", "z1", "z2", "z3"], edges), edges) == 0


def test_layout_of_2000_nodes_looks_at_each_node_once_per_sweep(monkeypatch):
    # Its time is benchmarks/gui_bench.py's (G1, the layout alone); here its work, as a
    # count: four barycenter sweeps, each asking every node's neighbours once.
    import networkx as nx

    asked = []
    for name in ("predecessors", "successors"):
        method = getattr(nx.DiGraph, name)
        monkeypatch.setattr(
            nx.DiGraph, name, lambda graph, n, _m=method: (asked.append(n), _m(graph, n))[1]
        )
    edges = [(f"n{i}", f"n{i * 3 + k}") for i in range(700) for k in (1, 2, 3) if i * 3 + k < 2000]
    layout = compute_layout([f"n{i}" for i in range(2000)], edges)
    assert len(layout.positions) == 2000
    assert 0 < len(asked) <= 4 * 2000


def test_cache_is_keyed_by_structure_only():
    cache = LayoutCache(size=2)
    key = structure_key("ab", [("a", "b")])
    cache.put(key, compute_layout("ab", [("a", "b")]))
    assert cache.get(structure_key(["b", "a"], [("a", "b")])) is not None
    assert cache.get(structure_key("ab", [])) is None


def test_nodes_are_built_in_items_and_edges_one_cosmetic_path(qtbot):
    scene = GraphScene()
    scene.set_tasks(tasks_of([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]))
    node = scene.nodes["a"]
    assert isinstance(node, QGraphicsPathItem)
    assert type(node).paint is QGraphicsPathItem.paint  # no Python paint() override
    texts = [c for c in node.childItems() if isinstance(c, QGraphicsSimpleTextItem)]
    assert [t.text() for t in texts][0] == "a"
    assert scene.edges_item.pen().isCosmetic()
    assert scene.edges_item.path().elementCount() > 0
    edge_items = [
        i for i in scene.items() if isinstance(i, QGraphicsPathItem) and not isinstance(i, NodeItem)
    ]
    # edges and heads (also of a drag in progress), five feedback paths and the bundled
    # edges' counts: never one per edge
    assert len(edge_items) == 10
    assert scene.itemIndexMethod() == QGraphicsScene.ItemIndexMethod.BspTreeIndex
    assert scene.sceneRect().contains(node.sceneBoundingRect())


def test_state_change_recolours_without_a_new_layout(qtbot):
    scene = GraphScene()
    tasks = tasks_of([("a", "b")])
    scene.set_tasks(tasks)
    layout = scene.layout
    misses = scene.cache.misses
    changed = {"b": tasks["b"]._replace(state=S.FAILED, attempt=2, error="Boom: x")}
    assert scene.update_tasks(changed) is False
    assert scene.layout is layout and scene.cache.misses == misses
    node = scene.nodes["b"]
    assert node.brush().color() == QColor(STATE_COLOURS[S.FAILED])
    assert "✗ failed" in node.status_text.text() and "#2" in node.status_text.text()


def test_recurring_mark_and_glyph_are_shown(qtbot):
    scene = GraphScene()
    scene.set_tasks({"tick": info("tick", state=S.SCHEDULED, recurring=True)})
    text = scene.nodes["tick"].status_text.text()
    assert "◷ scheduled" in text and "⟳" in text


def test_big_graph_is_laid_out_off_the_gui_thread(qtbot):
    scene = GraphScene()
    scene.collapse_above = None  # every task its own node (not one per group)
    edges = [(f"n{i}", f"n{i + 1}") for i in range(0, 1999, 2)]
    with qtbot.waitSignal(scene.layoutApplied, timeout=10_000):
        scene.set_tasks(tasks_of(edges, [f"n{i}" for i in range(2000)]))
        assert scene.layout is None  # returned before the layout existed
    assert len(scene.layout.positions) == 2000


def test_zoom_level_of_detail_fit_and_search(qtbot, monkeypatch):
    # A graph above the size fit keeps readable (test_polish covers the smaller ones).
    monkeypatch.setattr("taskloom.gui.graph.view.READABLE_UP_TO", 10)
    scene = GraphScene()
    scene.set_tasks(tasks_of([(f"t{i}", f"t{i + 1}") for i in range(30)]))
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(800, 500)
    view.show()
    qtbot.waitExposed(view)
    view.fit()
    assert view.zoom_level() < DETAIL_SCALE  # 31 layers do not fit at a readable size
    assert not scene.nodes["t0"].name_text.isVisible()
    view.resetTransform()
    view.zoom_in()
    assert view.zoom_level() > DETAIL_SCALE
    assert scene.nodes["t0"].name_text.isVisible()
    with qtbot.waitSignal(view.selectionChanged) as selected:
        assert view.find("T17") == "t17"
    assert selected.args[0] == ["t17"]
    centre = view.mapToScene(view.viewport().rect().center())
    assert scene.nodes["t17"].sceneBoundingRect().adjusted(-5, -5, 5, 5).contains(centre)
    assert view.find("nothing-like-this") is None
    view.close()


def test_edges_that_skip_layers_route_between_boxes():
    from PySide6.QtCore import QRectF

    from taskloom.gui.graph.layout import NODE_HEIGHT, NODE_WIDTH

    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("x", "b")]
    layout = compute_layout("abcdx", edges)
    assert list(layout.routes) == [("a", "d")]
    route = layout.routes[("a", "d")]
    assert len(route) == 2  # one slot in each skipped layer (b's and c's)
    boxes = [QRectF(x, y, NODE_WIDTH, NODE_HEIGHT) for x, y in layout.positions.values()]
    for cx, cy in route:
        assert not any(box.contains(cx, cy) for box in boxes)


def test_wheel_zooms_around_the_mouse(qtbot):
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    scene = GraphScene()
    scene.set_tasks(tasks_of([("a", "b"), ("b", "c")]))
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    qtbot.waitExposed(view)
    before = view.zoom_level()
    pos = QPointF(300, 200)
    wheel = QWheelEvent(
        pos,
        QPointF(view.viewport().mapToGlobal(pos.toPoint())),
        QPoint(0, 0),
        QPoint(0, 240),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(view.viewport(), wheel)
    assert view.zoom_level() > before * 1.2
    view.close()


def test_overview_appears_when_zoomed_in_and_moves_the_view(qtbot, monkeypatch):
    from PySide6.QtCore import QPoint, Qt

    monkeypatch.setattr("taskloom.gui.graph.view.READABLE_UP_TO", 10)  # fit shows it all

    scene = GraphScene()
    scene.set_tasks(tasks_of([(f"t{i}", f"t{i + 1}") for i in range(30)]))
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    qtbot.waitExposed(view)
    view.fit()
    assert not view.overview.isVisible()  # everything fits: no overview needed
    view.zoom_by(1 / view.zoom_level())  # 100 %
    view.centerOn(scene.nodes["t0"])
    assert view.overview.isVisible()
    before = view.visible_scene_rect().center()
    target = view.overview._target
    qtbot.mouseClick(
        view.overview,
        Qt.MouseButton.LeftButton,
        pos=QPoint(int(target.right() - 3), int(target.center().y())),
    )
    after = view.visible_scene_rect().center()
    assert after.x() > before.x() + 500  # jumped towards the right end of the chain
    view.resize(900, 250)  # a short pane: the overview would cover most of the graph
    qtbot.waitUntil(lambda: not view.overview.isVisible())
    view.close()


def test_arrow_keys_walk_the_graph(qtbot):
    from PySide6.QtCore import Qt

    scene = GraphScene()
    scene.set_tasks(tasks_of([("a", "b"), ("a", "c"), ("b", "d")]))
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(800, 500)
    view.show()
    qtbot.waitExposed(view)
    qtbot.keyClick(view, Qt.Key.Key_Right)
    assert view.selected() == ["a"]  # nothing selected yet: start at the first task
    qtbot.keyClick(view, Qt.Key.Key_Right)
    first = view.selected()[0]
    assert first in ("b", "c")
    qtbot.keyClick(view, Qt.Key.Key_Down if first == "b" else Qt.Key.Key_Up)
    assert view.selected() == ["c" if first == "b" else "b"]
    qtbot.keyClick(view, Qt.Key.Key_Left)
    assert view.selected() == ["a"]
    view.close()


def test_thousands_of_nodes_are_made_in_slices_between_events(qtbot):
    from PySide6.QtCore import QElapsedTimer, QTimer

    from taskloom.gui.graph.scene import CHUNKED_NODES, SLICE_MS

    scene = GraphScene()
    scene.collapse_above = None  # every task its own node (not one per group)
    ids = [f"n{i}" for i in range(3000)]
    edges = [(f"n{i}", f"n{i + 1}") for i in range(0, 2999, 3)]
    ticks = []
    clock = QElapsedTimer()
    ticker = QTimer()
    ticker.setInterval(0)
    ticker.timeout.connect(lambda: ticks.append(clock.elapsed()))
    clock.start()
    ticker.start()
    with qtbot.waitSignal(scene.layoutApplied, timeout=20_000):
        scene.set_tasks(tasks_of(edges, ids))
        # Returned at once: the view is worked out off the GUI thread, nodes built later.
        assert (scene.view_pending or scene.building) and len(scene.nodes) <= CHUNKED_NODES
    ticker.stop()
    assert len(ticks) >= 3  # other events ran while the nodes were being made
    assert not scene.building and set(scene.nodes) == set(ids)
    assert all(node.isVisible() for node in scene.nodes.values())
    assert scene.nodes["n1"].x() > scene.nodes["n0"].x()  # placed by the layout
    qtbot.waitUntil(lambda: not scene.edges_item.path().isEmpty(), timeout=5000)
    assert SLICE_MS <= 50


def test_dragged_positions_survive_a_new_layout(qtbot):
    scene = GraphScene()
    tasks = tasks_of([("a", "b")])
    scene.set_tasks(tasks)
    scene.pin_many({"b": (400.0, 250.0)})
    assert scene.nodes["b"].pos().x() == 400.0
    assert scene.sceneRect().contains(400.0 + 100, 250.0 + 20)  # room for the moved node
    scene.set_tasks({**tasks, "c": info("c", ["a"])})  # structure change: new layout
    assert (scene.nodes["b"].x(), scene.nodes["b"].y()) == (400.0, 250.0)
    scene.pin_many({"b": None})  # handed back to the layout
    assert (scene.nodes["b"].x(), scene.nodes["b"].y()) == scene.layout.positions["b"]


def test_export_graph_as_svg_and_png(qtbot, tmp_path):
    from PySide6.QtGui import QImage

    from taskloom.gui.graph.export import export_graph, png_size

    scene = GraphScene()
    scene.set_tasks(tasks_of([("extract_orders", "load_warehouse")], ["audit_log"]))
    scene.set_detail(False)  # zoomed out: the export still shows the names
    svg = export_graph(scene, tmp_path / "graph.svg")
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    for name in ("extract_orders", "load_warehouse", "audit_log"):
        assert name in text
    assert not scene.detail  # the view's level of detail is put back

    png = export_graph(scene, tmp_path / "graph.png")
    image = QImage(str(png))
    rect = scene.sceneRect()
    assert (image.width(), image.height()) == (round(rect.width()), round(rect.height()))
    assert png_size(scene).width() == image.width()
    colours = {
        image.pixelColor(x, y).name()
        for x in range(0, image.width(), 7)
        for y in (image.height() // 2,)
    }
    assert len(colours) > 3  # not a blank picture: nodes in their state colours
    try:
        export_graph(scene, tmp_path / "graph.jpg")
    except ValueError as exc:
        assert ".png or .svg" in str(exc)
    else:
        raise AssertionError("an unknown format must be refused")


def test_export_action_writes_the_file(qtbot, make_window, manual_scheduler, tmp_path):
    manual_scheduler.add(print, name="only_task")
    window = make_window(manual_scheduler)
    assert window.export_graph(tmp_path / "g.svg")
    assert "only_task" in (tmp_path / "g.svg").read_text(encoding="utf-8")
    assert "Exported" in window.statusBar().currentMessage()
    assert not window.export_graph(tmp_path / "missing_dir" / "g.png")
    assert "Cannot export" in window.statusBar().currentMessage()


# The arrowheads and the edge cache (from the screenshot review).
def test_arrowhead_shared_by_two_edges_is_filled(qtbot):
    scene = GraphScene()
    scene.set_tasks({"a": info("a"), "b": info("b"), "c": info("c", ["a", "b"])})
    assert scene.heads_item.path().fillRule() == Qt.FillRule.WindingFill
    tip = scene.nodes["c"].input_point()
    inside = tip - QPointF(ARROW_LENGTH * 0.4, 0)  # well inside the triangle
    rect = scene.sceneRect()
    image = QImage(int(rect.width()), int(rect.height()), QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    scene.render(painter, QRectF(image.rect()), rect)
    painter.end()
    pixel = image.pixelColor(int(inside.x() - rect.left()), int(inside.y() - rect.top()))
    # Odd-even fill left the two identical triangles as a white hole.
    assert pixel.lightness() < 200, pixel.name()


def test_big_graphs_cache_their_edges_as_a_picture(qtbot, monkeypatch):
    scene = GraphScene()
    scene.set_tasks({"a": info("a"), "b": info("b", ["a"]), "c": info("c", ["a", "b"])})
    assert scene.edges_item.cacheMode() == QGraphicsItem.CacheMode.NoCache
    monkeypatch.setattr(scene_module, "CACHED_EDGES", 2)
    scene.set_tasks({"a": info("a"), "b": info("b", ["a"]), "c": info("c", ["a", "b"])})
    scene._rebuild_edges()
    device = QGraphicsItem.CacheMode.DeviceCoordinateCache
    assert scene.edges_item.cacheMode() == device
    assert scene.heads_item.cacheMode() == device
