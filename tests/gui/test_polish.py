"""The small things from issue 13's polish list, each checked."""

from __future__ import annotations

from PySide6.QtGui import QFontMetrics

from taskloom.engine import TaskState

S = TaskState


def noop():
    return None


def test_event_log_shows_whole_dependency_event_names(qtbot):
    from taskloom.gui.event_log import EventLog

    log = EventLog()
    qtbot.addWidget(log)
    log.resize(500, 300)
    metrics = QFontMetrics(log.table.font())
    from taskloom.engine import Event
    from taskloom.gui.event_log import KINDS, _label_of_kind

    for kind in KINDS:
        assert log.table.columnWidth(3) >= metrics.horizontalAdvance(_label_of_kind(kind)) + 8
    removed = Event(1, "dependency_removed", "b", TaskState.PENDING, 0.0, 0, None, None)
    log.add_events([removed])
    index = log.model.index(0, 3)
    assert log.model.data(index) == "− dependency"  # whole, not "• …"
    assert "dependency removed" in log.model.data(index, 3)  # the tooltip role


def _alpha(pixmap) -> float:
    image = pixmap.toImage()
    total = sum(
        image.pixelColor(x, y).alpha() for x in range(image.width()) for y in range(image.height())
    )
    return total / (image.width() * image.height())


def test_disabled_icons_carry_a_faded_picture_of_their_own(qtbot):
    """Not the style's generated one, which in the dark theme looked enabled."""
    from PySide6.QtGui import QIcon

    from taskloom.gui.icons import icon

    run_now = icon("run-now")
    normal = _alpha(run_now.pixmap(24, 24, QIcon.Mode.Normal))
    disabled = _alpha(run_now.pixmap(24, 24, QIcon.Mode.Disabled))
    assert normal > 0 and disabled < normal * 0.5


def test_an_edit_does_not_move_the_other_nodes_and_new_ones_go_beside_a_neighbour(
    qtbot, make_window, manual_scheduler
):
    from tests.gui.test_editing import centre_of, chain_window, drag, port_of

    window = chain_window(make_window, manual_scheduler)
    scene = window.scene
    before = {tid: (n.pos().x(), n.pos().y()) for tid, n in scene.nodes.items()}
    drag(window, port_of(window, "load"), centre_of(window, "audit"))  # a real drag
    qtbot.waitUntil(lambda: scene.graph.has_edge("load", "audit"), timeout=3000)
    after = {tid: (n.pos().x(), n.pos().y()) for tid, n in scene.nodes.items()}
    moved = {tid for tid in before if after[tid] != before[tid]}
    assert moved <= {"audit"}  # a full relayout would have moved others too
    # audit stood left of load: it moves right of its new upstream (no back-edge).
    assert after["audit"][0] > after["load"][0]
    before["audit"] = after["audit"]
    manual_scheduler.add(noop, name="report", deps=["load"])
    qtbot.waitUntil(
        lambda: "report" in scene.nodes and scene.nodes["report"].isVisible(), timeout=3000
    )
    x, y = scene.nodes["report"].pos().x(), scene.nodes["report"].pos().y()
    load = scene.nodes["load"].pos()
    assert x > load.x()  # right of its upstream
    for tid, node in scene.nodes.items():  # overlapping nothing
        if tid != "report":
            assert not (abs(node.pos().x() - x) < 168 and abs(node.pos().y() - y) < 46)
    assert {t: p for t, p in before.items()} == {
        t: (scene.nodes[t].pos().x(), scene.nodes[t].pos().y()) for t in before
    }
    window.act_relayout.trigger()
    for tid, node in scene.nodes.items():
        assert (node.pos().x(), node.pos().y()) == scene.layout.positions[tid]


def test_fit_keeps_names_readable_and_ports_big_enough_to_hit(qtbot, make_window, manual_scheduler):
    from taskloom.gui.graph.items import PORT_RADIUS
    from taskloom.gui.graph.view import DETAIL_SCALE

    previous = None
    for n in range(8):  # a chain of 8: wider than an 800 px window at 45 %
        manual_scheduler.add(noop, name=f"step{n}", deps=[previous] if previous else [])
        previous = f"step{n}"
    window = make_window(manual_scheduler, size=(800, 600))
    window.graph_view.fit()
    zoom = window.graph_view.zoom_level()
    assert zoom >= DETAIL_SCALE
    node = window.scene.nodes["step0"]
    assert node.name_text.isVisible()
    centre = window.graph_view.mapFromScene(node.sceneBoundingRect().center())
    assert window.graph_view.viewport().rect().contains(centre)  # the chain's start shows
    on_screen = 2 * PORT_RADIUS * node.port.scale() * zoom
    assert on_screen >= 12  # was 4.7 px


def test_timeline_shows_later_occurrences_of_a_recurring_task(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_every(noop, 60, name="tick")
    manual_scheduler.schedule_cron(noop, "*/5 * * * *", name="cron")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    model = window.timeline.model
    entries = {tid: model.entries[tid] + model.later.get(tid, []) for tid in model.entries}
    ticks = sorted(e.run_at for e in entries["tick"])
    assert len(ticks) >= 10  # was 1: only the next occurrence
    assert all(abs((b - a) - 60) < 1e-6 for a, b in zip(ticks, ticks[1:], strict=False))
    crons = sorted(e.run_at for e in entries["cron"])
    assert len(crons) >= 2
    assert all(abs((b - a) - 300) < 1e-6 for a, b in zip(crons, crons[1:], strict=False))
