"""Fixes from the screenshot review: filled shared arrowheads, cached big edge paths,
forced themes, centred axis labels, the timeline's fitted range, readable log text,
log columns that fit, the run summary and a visible cancelled grey in the dark theme."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QGraphicsItem

import taskloom.gui.graph.scene as scene_module
from taskloom.cli import _window_parser
from taskloom.engine import Event, TaskInfo, TaskState
from taskloom.gui.event_log import EventLog
from taskloom.gui.graph.items import ARROW_LENGTH
from taskloom.gui.graph.scene import GraphScene
from taskloom.gui.style import (
    STATE_COLOURS,
    apply_theme,
    contrast,
    is_dark,
    state_colour,
    state_outline,
    state_text_colour,
    theme_palette,
)
from taskloom.gui.timeline import LABEL_WIDTH, SPANS

S = TaskState
ROOT = Path(__file__).resolve().parents[2]


def info(tid, deps=(), state=S.PENDING):
    return TaskInfo(tid, tid, state, tuple(deps), (), 0, 0, None, False, False, None)


def noop():
    return None


# -- 1, 2: arrowheads and the edge cache -------------------------------------------------
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


# -- 3: the theme switch -------------------------------------------------------------------
def test_apply_theme_forces_dark_and_light(qapp):
    original = QGuiApplication.palette()
    try:
        assert apply_theme(qapp, "dark") == "dark"
        assert is_dark(QGuiApplication.palette())
        assert apply_theme(qapp, "light") == "light"
        assert not is_dark(QGuiApplication.palette())
        with pytest.raises(ValueError):
            apply_theme(qapp, "purple")
    finally:
        QApplication.setPalette(original)


def test_window_parser_takes_theme_and_select():
    args = _window_parser().parse_args(["--theme", "dark", "--select", "flaky"])
    assert (args.theme, args.select) == ("dark", "flaky")
    assert _window_parser().parse_args([]).theme is None
    with pytest.raises(SystemExit):
        _window_parser().parse_args(["--theme", "sepia"])


@pytest.mark.timeout(90)
def test_screenshot_in_the_dark_theme_with_a_task_selected(tmp_path):
    out = tmp_path / "dark.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_DATA_HOME=str(tmp_path))
    env["TASKLOOM_THEME"] = "dark"  # the environment variable alone picks the theme
    command = [sys.executable, "-m", "taskloom", str(ROOT / "resources/examples/flaky.toml")]
    command += ["--screenshot", str(out), "--quit-after", "1", "--select", "reset"]
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=80)
    image = QImage(str(out))
    assert image.width() >= 960
    corner = image.pixelColor(image.width() // 3, image.height() // 4)  # the graph's background
    assert corner.lightness() < 60, corner.name()


# -- 4, 6: the timeline ----------------------------------------------------------------------
def test_axis_labels_are_centred_on_their_ticks(qtbot, make_window, manual_scheduler):
    window = make_window(manual_scheduler)
    timeline = window.timeline
    timeline.set_span(150)
    axis, canvas = timeline.axis, timeline.canvas
    axis.repaint()
    now = manual_scheduler.clock.now()
    assert len(axis.label_rects) >= 3
    for t, box in axis.label_rects:
        assert abs(box.center().x() - canvas.x_of(t, now)) < 0.5
        assert box.left() >= LABEL_WIDTH and box.right() <= axis.width()


def test_timeline_fits_a_short_run_until_the_user_zooms(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 2, name="first")
    manual_scheduler.schedule_after(noop, 5, name="second")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    timeline = window.timeline
    canvas = timeline.canvas
    qtbot.waitUntil(lambda: len(timeline.model.entries) == 2, timeout=3000)
    manual_scheduler.clock.advance(3)  # "first" runs: a bar from t0+2
    qtbot.waitUntil(lambda: "first" in timeline.model.bars, timeout=3000)
    now = manual_scheduler.clock.now()
    assert canvas.refit(now) or canvas.fit_left is not None
    left, right = canvas.window(now)
    assert canvas.span == 20.0  # 3 s of work fits the smallest fitted range
    started = timeline.model.bars["first"][0][0]
    assert left < started and right > now + 2  # the bar and the upcoming "second"
    width = canvas.x_of(started + 1, now) - canvas.x_of(started, now)
    assert width > 15  # a 1 s attempt is readable (2 px on the old fixed 150 s range)
    canvas.zoom(-10)  # the user zooms in: no more fitting
    assert canvas.span == SPANS[0] == 10.0
    assert not canvas.auto_fit and not canvas.refit(now)


# -- 7, 8: the event log ---------------------------------------------------------------------
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_state_text_reads_on_the_log_in_both_themes(theme):
    palette = theme_palette(theme)
    rows = [palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.AlternateBase)]
    for state in TaskState:
        colour = state_text_colour(state, rows)
        for background in rows:
            assert contrast(colour, background) >= 4.5, (state, colour.name())
    assert contrast(QColor("#F0E442").darker(115), QColor("white")) < 2  # what ready was


def test_log_shows_kinds_as_words_and_colours_by_palette(qtbot):
    log = EventLog()
    qtbot.addWidget(log)
    log.add_events([Event(1, "retry_wait", "t", S.RETRY_WAIT, 0.0, 1, 5.0, "boom")])
    index = log.model.index(0, 3)
    assert log.model.data(index) == "↻ retry wait"
    assert log.kind_filter.findText("retry wait") >= 0
    log.model.set_palette(theme_palette("light"))
    colour = log.model.data(index, Qt.ItemDataRole.ForegroundRole).color()
    assert contrast(colour, QColor("#FFFFFF")) >= 4.5


def test_log_columns_fit_at_1400_px(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="a_rather_long_task_name")
    window = make_window(manual_scheduler, size=(1400, 900))
    manual_scheduler.start()
    table = window.event_log.table
    qtbot.waitUntil(lambda: table.model().rowCount() > 0, timeout=3000)
    header = table.horizontalHeader()
    assert header.length() <= table.viewport().width()
    assert table.horizontalScrollBar().maximum() == 0
    metrics = header.fontMetrics()
    for column in (0, 1, 3, 4):  # the fixed columns are at least as wide as their header
        title = table.model().headerData(column, Qt.Orientation.Horizontal)
        assert header.sectionSize(column) >= metrics.horizontalAdvance(title)


# -- 9: the run summary ----------------------------------------------------------------------
def failing():
    raise ValueError("bad row 17")


def test_inspector_summarises_the_run_with_nothing_selected(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="ok")
    manual_scheduler.add(failing, name="broken")
    manual_scheduler.schedule_after(noop, 30, name="later")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["broken"].state is S.FAILED, timeout=3000)
    inspector = window.inspector
    inspector.refresh()
    assert inspector.pages.currentIndex() == 1
    text = inspector.summary.text()
    assert "3 tasks" in text and "failed" in text and "bad row 17" in text
    assert 'href="later"' in text and "in 30.0 s" in text
    inspector.summary.linkActivated.emit("broken")  # what clicking the link sends
    assert window.graph_view.selected() == ["broken"]
    assert inspector.pages.currentIndex() == 0
    assert inspector.title.text() == "broken"


# -- 10: cancelled in the dark theme ----------------------------------------------------------
def test_cancelled_is_visible_on_the_dark_background():
    base = QColor("#17181A")
    assert contrast(QColor(STATE_COLOURS[S.CANCELLED]), base) < 2.5  # what it was
    assert contrast(state_colour(S.CANCELLED, dark=True), base) >= 3
    assert contrast(state_outline(S.CANCELLED, dark=True), base) >= 7
    assert state_colour(S.CANCELLED).name() == STATE_COLOURS[S.CANCELLED].lower()  # light as is
