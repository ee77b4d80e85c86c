"""Expand all on a big graph (issue 25): cards drawn in bulk, node items made only where
a person needs one, and the window answers clicks, hovers, menus, drags and Find on
every card as before (real scene and view, offscreen)."""

from __future__ import annotations

import random

from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QContextMenuEvent, QHelpEvent
from PySide6.QtWidgets import QApplication

from taskloom.engine import TaskState
from taskloom.gui.graph.bulk import BulkCards
from taskloom.gui.graph.layout import NODE_HEIGHT, NODE_WIDTH
from taskloom.gui.graph.scene import GraphScene
from taskloom.gui.graph.view import DETAIL_SCALE, GraphView
from tests.gui.test_editing import send_mouse
from tests.gui.test_groups import graph

S = TaskState

LEFT, NONE = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton


def drag(view, start: QPointF, end: QPointF, steps=6) -> None:
    viewport = view.viewport()
    a, b = view.mapFromScene(start), view.mapFromScene(end)
    send_mouse(viewport, QEvent.Type.MouseButtonPress, a, LEFT, LEFT)
    for i in range(1, steps + 1):
        send_mouse(viewport, QEvent.Type.MouseMove, a + (b - a) * (i / steps), NONE, LEFT)
    send_mouse(viewport, QEvent.Type.MouseButtonRelease, b, LEFT, NONE)


def random_dag(n: int, seed: int = 11) -> dict:
    """The benchmark's shape: task i depends on up to 3 tasks before it."""
    rng = random.Random(seed)
    edges = []
    for i in range(1, n):
        if rng.random() < 0.75:
            edges += [(f"t{d}", f"t{i}") for d in {rng.randrange(i) for _ in range(3)}]
    return graph(edges, nodes=[f"t{i}" for i in range(n)])


def shown(qtbot, scene, width=1400, height=900) -> GraphView:
    view = GraphView(scene)
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    qtbot.waitExposed(view)
    return view


def centre(scene, tid) -> QPointF:
    x, y = scene.position_of(tid)
    return QPointF(x + NODE_WIDTH / 2, y + NODE_HEIGHT / 2)


def test_expand_all_on_20000_tasks_makes_no_item_per_task(qtbot):
    scene = GraphScene()
    view = shown(qtbot, scene)
    scene.set_tasks(random_dag(20_000))
    qtbot.waitUntil(scene.is_drawn, timeout=60_000)
    assert scene.group_items and not scene.virtual  # a big graph opens as its groups
    scene.expand_all()
    qtbot.waitUntil(scene.is_drawn, timeout=120_000)
    view.fit(readable=False)
    QApplication.processEvents()
    assert scene.virtual and len(scene.nodes) == 20_000 and not scene.group_items
    # A few hundred Qt items (tiles of cards, edges, overlays), not 4 per task.
    assert len(scene.items()) <= 400
    assert len(scene.nodes.made) == 0 and view.zoom_level() < DETAIL_SCALE
    # Every task's card is drawn once, where the layout put it.
    drawn = [t for tile in scene.bulk.members.values() for t in tile]
    assert sorted(drawn) == sorted(scene.tasks)
    for tid in ("t0", "t12345", "t19999"):
        assert scene.bulk.at(centre(scene, tid).x(), centre(scene, tid).y()) == tid
        assert scene.layout.positions[tid] == scene.bulk.where[tid]


def small_virtual(qtbot, n=60):
    """A graph drawn in bulk from 20 tasks (the threshold lowered), in a real view."""
    scene = GraphScene()
    scene.virtual_above = 20
    scene.collapse_above = None
    view = shown(qtbot, scene, 900, 600)
    view._fit_pending = view._following_fit = False
    view.scale(0.3, 0.3)  # below the detail zoom: no card's item is made for the eye
    view._update_detail()
    scene.set_tasks(graph([(f"a{i}", f"b{i}") for i in range(n // 2)]))
    qtbot.waitUntil(scene.is_drawn, timeout=10_000)
    QApplication.processEvents()
    assert scene.virtual and not scene.nodes.made
    return scene, view


def test_a_bulk_card_is_clicked_hovered_and_menued_like_a_node(qtbot):
    scene, view = small_virtual(qtbot)
    view.centerOn(centre(scene, "b3"))
    at = view.mapFromScene(centre(scene, "b3"))
    with qtbot.waitSignal(view.selectionChanged, timeout=3000) as selected:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=at)
    assert selected.args == [["b3"]]
    assert set(scene.nodes.made) == {"b3"}  # made for the click, nothing else
    assert scene.nodes["b3"].pos() == QPointF(*scene.position_of("b3"))
    assert scene.nodes["b3"].isVisible()
    # Hovering another card: its item (and so its tooltip) is there when Qt asks.
    other = view.mapFromScene(centre(scene, "a3"))
    tip = QHelpEvent(QEvent.Type.ToolTip, other, view.viewport().mapToGlobal(other))
    QApplication.sendEvent(view.viewport(), tip)
    assert "a3" in scene.nodes.made and "<b>a3</b>" in scene.nodes["a3"].toolTip()
    # Right-click on a third: selected, and the menu asked for.
    third = view.mapFromScene(centre(scene, "a4"))
    with qtbot.waitSignal(view.menuRequested, timeout=3000):
        menu = QPoint(third)
        event = QContextMenuEvent(
            QContextMenuEvent.Reason.Mouse, menu, view.viewport().mapToGlobal(menu)
        )
        QApplication.sendEvent(view.viewport(), event)
    assert scene.selected == ["a4"]


def test_a_bulk_card_takes_its_new_state_colour(qtbot):
    scene, _view = small_virtual(qtbot)
    tile = scene.bulk.tile_of["b5"]
    assert (tile, S.FAILED) not in scene.bulk.items
    failed = scene.tasks["b5"]._replace(state=S.FAILED)
    scene.update_tasks({"b5": failed})
    qtbot.waitUntil(lambda: not scene.bulk.dirty, timeout=3000)
    item = scene.bulk.items[(tile, S.FAILED)]
    assert item.path().contains(centre(scene, "b5"))
    assert not scene.bulk.items[(tile, S.PENDING)].path().contains(centre(scene, "b5"))
    assert not scene.nodes.made  # recoloured in bulk: no item made for it


def test_zoomed_in_the_cards_in_sight_are_real_nodes_and_take_a_connection(qtbot):
    scene, view = small_virtual(qtbot)
    view.zoom_by(1.0 / 0.3)  # 100 %: names are legible
    view.centerOn(centre(scene, "a2"))
    qtbot.waitUntil(lambda: "a2" in scene.nodes.made and "b2" in scene.nodes.made, timeout=3000)
    in_sight = view.mapToScene(view.viewport().rect()).boundingRect()
    for tid in scene.bulk.inside(in_sight):
        if in_sight.contains(centre(scene, tid)):
            assert tid in scene.nodes.made and scene.nodes.made[tid].isVisible()
    assert len(scene.nodes.made) < len(scene.nodes)  # the rest stay in bulk
    # Drag from a2's port to a3's card: the view asks for the edge.
    with qtbot.waitSignal(view.connectRequested, timeout=3000) as asked:
        drag(view, scene.nodes["a2"].port.scenePos(), centre(scene, "a3"))
    assert asked.args == ["a2", "a3"]


def test_find_selects_and_centres_a_task_drawn_in_bulk(qtbot):
    scene, view = small_virtual(qtbot)
    with qtbot.waitSignal(view.selectionChanged, timeout=3000):
        assert view.find("b7") == "b7"
    assert scene.selected == ["b7"] and "b7" in scene.nodes.made
    assert scene.halo.path().contains(centre(scene, "b7"))
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert seen.contains(centre(scene, "b7"))


def test_the_bulk_hit_grid_finds_cards_only_inside_them():
    from PySide6.QtWidgets import QGraphicsScene

    bulk = BulkCards(QGraphicsScene())
    bulk.place({"a": (0.0, 0.0), "b": (NODE_WIDTH + 80.0, 0.0)})
    assert bulk.at(5, 5) == "a" and bulk.at(NODE_WIDTH + 85, NODE_HEIGHT - 1) == "b"
    assert bulk.at(NODE_WIDTH + 40, 5) is None  # the gap between layers
    bulk.move("a", 0.0, 500.0)
    assert bulk.at(5, 5) is None and bulk.at(5, 505) == "a"


def test_find_into_a_collapsed_group_of_10000_makes_only_the_cards_in_sight(qtbot, monkeypatch):
    from taskloom.gui.graph.scene import NODES_PER_SLICE

    made_per_slice: list[int] = []
    make = GraphScene.make_visible_nodes

    def counted(self, rect, limit=NODES_PER_SLICE):
        before = len(self.nodes.made)
        done = make(self, rect, limit)
        made_per_slice.append(len(self.nodes.made) - before)
        return done

    monkeypatch.setattr(GraphScene, "make_visible_nodes", counted)
    scene = GraphScene()
    view = shown(qtbot, scene)
    scene.set_tasks(random_dag(10_000))
    qtbot.waitUntil(scene.is_drawn, timeout=60_000)
    target = "t5007"
    assert scene.group_of(target) in scene.collapsed and not scene.nodes.made
    with qtbot.waitSignal(view.selectionChanged, timeout=60_000):
        view.find(target)
    qtbot.waitUntil(lambda: scene.is_drawn() and not view._sweep_timer.isActive(), timeout=60_000)
    members = [t for t, g in scene.groups.items() if g == scene.group_of(target)]
    assert len(members) > scene.virtual_above and scene.virtual  # its group is drawn in bulk
    assert scene.selected == [target] and scene.nodes.made[target].isVisible()
    in_sight = view.mapToScene(view.viewport().rect()).boundingRect()
    assert in_sight.contains(centre(scene, target))
    # Items only for the cards in sight (at 100 %: names legible), a bounded number per slice.
    assert 10 < len(scene.nodes.made) <= len(scene.bulk.inside(in_sight)) + 1 < len(members)
    assert made_per_slice and max(made_per_slice) <= NODES_PER_SLICE


def test_a_card_dragged_elsewhere_stays_there_when_its_item_goes_back_to_the_bulk(qtbot):
    import taskloom.gui.graph.scene as scene_module

    scene, view = small_virtual(qtbot)
    view.centerOn(centre(scene, "b3"))
    start = centre(scene, "b3")
    with qtbot.waitSignal(view.nodesMoved, timeout=3000) as moved:
        drag(view, start, start + QPointF(0, 400))
    scene.pin_many({tid: now for tid, (_before, now) in moved.args[0].items()})
    where = scene.position_of("b3")
    assert where[1] > scene.layout.positions["b3"][1] + 300
    assert scene.nodes.made["b3"].pos() == QPointF(*where)
    # Out of sight and not selected: b3's item goes back to the bulk, its card where it was put.
    scene.set_selection([])
    old_cap = scene_module.MADE_CAP
    scene_module.MADE_CAP = 0
    try:
        scene.make_visible_nodes(QRectF(-9000, -9000, 10, 10))  # the view went elsewhere
    finally:
        scene_module.MADE_CAP = old_cap
    qtbot.waitUntil(lambda: not scene.bulk.dirty, timeout=3000)
    assert "b3" not in scene.nodes.made
    card = QPointF(where[0] + NODE_WIDTH / 2, where[1] + NODE_HEIGHT / 2)
    assert scene.bulk.at(card.x(), card.y()) == "b3"
    assert scene.bulk.items[(scene.bulk.tile_of["b3"], S.PENDING)].path().contains(card)
