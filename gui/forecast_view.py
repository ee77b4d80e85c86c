"""The live forecast in the window: what ``Forecaster`` answers, shown where it belongs.

- the status bar: the expected finish of this run (p50), the p90 and the critical
  path on hover;
- the graph: the critical path of the remaining work (its edges and nodes ringed
  in ``CRITICAL_COLOUR``), each waiting task's expected start on its card, and a
  "slower than usual" ring and note on a running task already past its p90;
- the timeline: the forecast's runs still to come, as ghost bars after now.

Everything here runs on the GUI thread and only reads the forecast; the window
wires it in with ``ForecastView(window)``.
"""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPainterPath, QPalette
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsSimpleTextItem, QLabel

from taskloom.engine import TaskState

from .forecaster import Forecaster, Live
from .graph.items import cosmetic_pen, format_elapsed
from .graph.layout import NODE_HEIGHT, NODE_WIDTH
from .timeline import CRITICAL_COLOUR

SLOW_COLOUR = QColor("#E69F00")  # amber: a running attempt past its usual p90
WAITING = (TaskState.PENDING, TaskState.SCHEDULED, TaskState.READY, TaskState.RETRY_WAIT)
BADGE_LIMIT = 2000  # expected-start badges on at most this many cards


def clock_text(moment: datetime, now: datetime) -> str:
    """18:42:10, with the day when it is not today."""
    local, today = moment.astimezone(), now.astimezone()
    text = local.strftime("%H:%M:%S")
    return text if local.date() == today.date() else local.strftime("%a %d %b ") + text


def eta_texts(live: Live | None, now: datetime) -> tuple[str, str]:
    """(status bar text, tooltip) for a forecast; empty when there is nothing to finish."""
    if live is None:
        return "", ""
    f = live.forecast
    if f.finish is None:
        return "", ""
    p50 = f.finish_p50 if f.finish_p50 is not None else f.finish
    p90 = f.finish_p90 if f.finish_p90 is not None else f.finish
    left = (f.at(p50) - now).total_seconds()
    text = f"ETA {clock_text(f.at(p50), now)} (in {format_elapsed(left)})"
    tip = [
        f"Expected finish of this run: {clock_text(f.at(p50), now)} (p50)",
        f"p90: {clock_text(f.at(p90), now)}",
        f"from {f.passes} simulated runs with durations drawn from history",
    ]
    if f.critical_path:
        tip.append("critical path: " + " → ".join(f.critical_path))
    return text, "\n".join(tip)


class ForecastView:
    """Owns the forecaster and the pieces that show its answers (see the module doc)."""

    def __init__(self, window):
        self.window = window
        scene = window.scene
        self.forecaster = Forecaster(
            window.scheduler,
            expected=self._expected,
            horizon=lambda: window.timeline.canvas.horizon,
            active=self._active,
            running=self._running,
            parent=window,
        )
        self.eta = QLabel()
        self.eta.setObjectName("forecastEta")
        window.statusBar().addPermanentWidget(self.eta)
        self.critical = QGraphicsPathItem()
        self.critical.setZValue(0.85)  # over the edges, under the selection halo
        self.critical.setPen(cosmetic_pen(QColor(CRITICAL_COLOUR), 3.0))
        self.critical.setBrush(Qt.BrushStyle.NoBrush)
        self.slow_rings = QGraphicsPathItem()
        self.slow_rings.setZValue(0.86)
        self.slow_rings.setPen(cosmetic_pen(SLOW_COLOUR, 3.0, Qt.PenStyle.DashLine))
        scene.addItem(self.critical)
        scene.addItem(self.slow_rings)
        self.badges: dict[str, QGraphicsSimpleTextItem] = {}
        self.slow: set[str] = set()
        self.live: Live | None = None
        window.bridge.tasksChanged.connect(lambda _changed: self.forecaster.request())
        window.bridge.structureChanged.connect(self.forecaster.forget_definitions)
        window.bridge.structureChanged.connect(self.forecaster.request)
        self.forecaster.forecastReady.connect(self.show)
        # Only while time changes what is shown: running tasks turn slow (checked every
        # second), and the ETA's "in 3m05s" counts down (_pace).
        self._closed = False
        self._tick = QTimer(window)
        self._tick.setSingleShot(True)
        self._tick.timeout.connect(self._on_tick)
        window.bridge.tasksChanged.connect(lambda _changed: self._pace())
        self.forecaster.request()

    def _active(self) -> bool:
        counts = self.window.bridge.state_counts()
        return any(counts[s] for s in (*WAITING, TaskState.RUNNING))

    def _running(self) -> bool:
        return self.window.bridge.state_counts()[TaskState.RUNNING] > 0

    def _on_tick(self) -> None:
        self._show_eta()
        self.refresh_slow()
        self._pace()

    def _pace(self) -> None:
        """Tick in a second while tasks run; when the ETA's text changes otherwise (a
        minute's step once it is an hour away); not at all when nothing moves."""
        if self._closed:
            return
        wait = None
        if self._running():
            wait = 1.0
        elif self.live is not None and self.live.forecast.finish is not None:
            f = self.live.forecast
            p50 = f.finish_p50 if f.finish_p50 is not None else f.finish
            left = (f.at(p50) - datetime.now().astimezone()).total_seconds()
            if left > 0:
                wait = (left % 60) + 0.05 if left >= 3600 else (left % 1) + 0.05
        if wait is None:
            self._tick.stop()
        elif not self._tick.isActive() or self._tick.remainingTime() > wait * 1000:
            self._tick.start(int(wait * 1000))

    def _show_eta(self) -> None:
        text, tip = eta_texts(self.live, datetime.now().astimezone())
        self.eta.setText(text)
        self.eta.setToolTip(tip)
        self.eta.setVisible(bool(text))

    def _expected(self) -> dict:
        workflow = self.window.workflow
        if workflow is None:
            return {}
        return {tid: d.expected for tid, d in workflow.tasks.items() if d.expected is not None}

    # -- answers ----------------------------------------------------------------------
    def show(self, live: Live | None) -> None:
        self.live = live
        self._show_eta()
        self._show_critical_path()
        self._show_badges()
        self._show_ghosts()
        self.refresh_slow()
        self._pace()

    def _show_critical_path(self) -> None:
        scene = self.window.scene
        path = QPainterPath()
        chain = self.live.forecast.critical_path if self.live is not None else []
        for up, down in zip(chain, chain[1:], strict=False):
            if up in scene.nodes and down in scene.nodes and scene.graph.has_edge(up, down):
                path.addPath(scene.edge_path(up, down))
        for tid in chain:
            node = scene.nodes.get(tid)
            if node is not None:
                path.addRoundedRect(node.sceneBoundingRect().adjusted(-2, -2, 2, 2), 10, 10)
        self.critical.setPath(path)

    def _show_badges(self) -> None:
        """Each waiting task's expected start, just under its card (on the card it hid
        the recurring and paused marks)."""
        scene = self.window.scene
        starts = self.live.forecast.starts if self.live is not None else {}
        wanted: dict[str, str] = {}
        now = datetime.now().astimezone()
        for tid, info in scene.tasks.items():
            if len(wanted) >= BADGE_LIMIT:
                break
            if info.state in WAITING and tid in starts and tid in scene.nodes:
                wanted[tid] = "≈ " + clock_text(self.live.forecast.at(starts[tid]), now)[-8:]
        for tid in list(self.badges):
            if tid not in wanted or tid not in scene.nodes:
                badge = self.badges.pop(tid)
                if badge.scene() is not None:
                    badge.scene().removeItem(badge)
        for tid, text in wanted.items():
            badge = self.badges.get(tid)
            node = scene.nodes[tid]
            if badge is None or badge.parentItem() is not node:
                badge = self.badges[tid] = QGraphicsSimpleTextItem(node)
                font = QFont()
                font.setPointSizeF(8)
                badge.setFont(font)
                badge.setBrush(self.window.palette().color(QPalette.ColorRole.Text))
            if badge.text() != text:
                badge.setText(text)
                badge.setToolTip("expected start (forecast)")
            badge.setPos(8, NODE_HEIGHT + 4)  # clear of the critical path ring

    def _show_ghosts(self) -> None:
        ghosts: dict[str, list[tuple[float, float, bool]]] = {}
        collisions: dict[str, list[tuple[float, str, str]]] = {}
        if self.live is not None:
            for c in self.live.forecast.collisions:
                collisions.setdefault(c.task_id, []).append(
                    (self.live.forecast.origin + c.at, c.kind, c.detail)
                )
            f = self.live.forecast
            on_path = set(f.critical_path)
            for run in f.runs:
                if run.replay:
                    continue  # done already: its real bar is drawn
                # (a running attempt's ghost starts at now, where its real bar ends)
                ghosts.setdefault(run.task_id, []).append(
                    (f.origin + run.start, f.origin + run.end, run.task_id in on_path)
                )
        self.window.timeline.set_ghosts(ghosts, collisions)

    # -- slower than usual --------------------------------------------------------------
    def refresh_slow(self) -> None:
        """Ring running tasks already slower than their p90 (checked every second while
        tasks run)."""
        scene = self.window.scene
        model = self.live.model if self.live is not None else None
        slow = set()
        if model is not None:
            for tid, info in scene.tasks.items():
                if info.state is TaskState.RUNNING:
                    elapsed = self.window._running_for(tid)
                    if elapsed is not None and model.is_slow(tid, elapsed):
                        slow.add(tid)
        if slow == self.slow:
            return
        self.slow = slow
        path = QPainterPath()
        for tid in slow:
            node = scene.nodes.get(tid)
            if node is not None:
                rect = QRectF(node.pos() - QPointF(6, 6), node.pos() + QPointF(6, 6))
                rect.setSize(rect.size() + QRectF(0, 0, NODE_WIDTH, NODE_HEIGHT).size())
                path.addRoundedRect(rect, 12, 12)
                node.setToolTip(node.toolTip() + "<br><b>slower than usual</b> (past its p90)")
        self.slow_rings.setPath(path)
        self.slow_rings.setToolTip("slower than usual: past the p90 of its earlier runs")

    def close(self) -> None:
        self._closed = True
        self._tick.stop()
        self.forecaster.close()
