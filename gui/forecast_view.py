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

from datetime import datetime, timedelta

import shiboken6
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPainterPath, QPalette
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsSimpleTextItem, QLabel

from taskloom.engine import TaskState
from taskloom.engine.durations_model import GUESS, SLOW_MIN_RUNS

from .forecaster import MAX_RUNS, Forecaster, Live
from .graph.grouped_scene import BACKGROUND_VIEW_TASKS
from .graph.items import cosmetic_pen, format_elapsed
from .graph.layout import NODE_HEIGHT, NODE_WIDTH
from .style import PAUSED_GLYPH
from .timeline import CRITICAL_COLOUR

SLOW_COLOUR = QColor("#E69F00")  # amber: a running attempt past its usual p90
WAITING = (TaskState.PENDING, TaskState.SCHEDULED, TaskState.READY, TaskState.RETRY_WAIT)
BADGE_LIMIT = 2000  # expected-start badges on at most this many cards


def clock_text(moment: datetime, now: datetime) -> str:
    """18:42:10, with the day when it is not today."""
    local, today = moment.astimezone(), now.astimezone()
    text = local.strftime("%H:%M:%S")
    return text if local.date() == today.date() else local.strftime("%a %d %b ") + text


OVERDUE_STEP = 1.0  # seconds: an ETA that time caught up with moves this far ahead


def guessed_tasks(live: Live) -> list[str]:
    """The tasks still to run whose durations the forecast guessed: no past run, no
    ``expected`` key (a first run knows nothing: each is given a second)."""
    model = live.model
    if model is None:
        return []
    left = {r.task_id for r in live.forecast.runs if not r.replay}
    return sorted(t for t in left if model.stats(t).source == GUESS)


def eta_texts(live: Live | None, now: datetime, paused: bool = False) -> tuple[str, str]:
    """(status bar text, tooltip) for a forecast; empty when there is nothing to finish.

    Read again as time passes (``ForecastView.tick``): an ETA is never in the past
    (work that runs past its forecast pushes it, until the next forecast says how far),
    and while the dispatcher is paused nothing counts down."""
    if live is None:
        return "", ""
    f = live.forecast
    if f.finish is None:
        return "", ""
    if paused:
        return (
            f"ETA {PAUSED_GLYPH} paused",
            "Nothing starts while the dispatcher is paused: the finish moves by as long "
            "as the pause lasts. Resume all to go on.",
        )
    p50 = f.finish_p50 if f.finish_p50 is not None else f.finish
    p90 = f.finish_p90 if f.finish_p90 is not None else f.finish
    finish = f.at(p50)
    late = (now - finish).total_seconds() + OVERDUE_STEP
    if late > 0:  # running past the forecast: it pushes the finish
        finish = finish + timedelta(seconds=late)
    left = (finish - now).total_seconds()
    guessed = guessed_tasks(live)
    if guessed:
        text = f"ETA ~{clock_text(finish, now)} (in {format_elapsed(left)}, a guess)"
    else:
        text = f"ETA {clock_text(finish, now)} (in {format_elapsed(left)})"
    tip = [
        f"Expected finish of this run: {clock_text(finish, now)} (p50)",
        f"p90: {clock_text(max(f.at(p90), finish), now)}",
        f"from {f.passes} simulated runs with durations drawn from history",
    ]
    if guessed:
        names = ", ".join(guessed[:5]) + (
            f" and {len(guessed) - 5} more" if len(guessed) > 5 else ""
        )
        tip.append(
            f"a guess: {names} {'has' if len(guessed) == 1 else 'have'} no past runs and no"
            f" 'expected' key; each is given {format_elapsed(live.model.fallback)}"
            " (the median of the tasks that ran, else 1 s)"
        )
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
        self._ringed: set[str] = set()  # the tasks the critical path's ring is on
        self.badge_times: dict[str, datetime] = {}  # each badge's time, never a past one
        self.slow: set[str] = set()
        self.live: Live | None = None
        self.hidden = False  # a past run is shown: nothing of the live forecast on the graph
        window.bridge.tasksChanged.connect(lambda _changed: self.forecaster.request())
        window.bridge.structureChanged.connect(self.forecaster.forget_definitions)
        window.bridge.structureChanged.connect(self.forecaster.request)
        self.forecaster.forecastReady.connect(self.show)
        # The timeline's look-ahead: "filling…" while a forecast that looks further
        # than the one shown is computed, then where its ghosts end.
        self._shown_horizon = 0.0
        self.forecaster.computing.connect(self._computing)
        window.timeline.lookAheadChanged.connect(self.forecaster.request)
        window.timeline.canvas.viewChanged.connect(self._view_changed)
        # Only while time changes what is shown: running tasks turn slow (checked every
        # second), and the ETA's "in 3m05s" counts down (_pace).
        self._closed = False
        self._tick = QTimer(window)
        self._tick.setSingleShot(True)
        self._tick.timeout.connect(self._on_tick)
        window.bridge.tasksChanged.connect(lambda _changed: self._pace())
        # Between two forecasts (seconds apart under load) the marks follow the states:
        # a task that settles leaves the ring, one that starts loses its expected start.
        window.bridge.tasksChanged.connect(self._states_changed)
        scene = window.scene
        if len(window.bridge.tasks) >= BACKGROUND_VIEW_TASKS and not scene.is_drawn():
            # A big graph is being worked out on other threads: the first forecast (a
            # copy of every task) waits for it, rather than take the GIL from it.
            self.forecaster.hold()

            def drawn() -> None:
                scene.layoutApplied.disconnect(drawn)
                self.forecaster.release()

            scene.layoutApplied.connect(drawn)
        self.forecaster.request()

    def _active(self) -> bool:
        """Whether there is a run going on to forecast: started, and (watched) its
        owner alive; then whether anything is left to do."""
        if not getattr(self.window, "started", True):
            return False
        if not self.window.scheduler.owner_alive:
            return False
        counts = self.window.bridge.state_counts()
        return any(counts[s] for s in (*WAITING, TaskState.RUNNING))

    def _running(self) -> bool:
        return self.window.bridge.state_counts()[TaskState.RUNNING] > 0

    def _on_tick(self) -> None:
        self.tick()
        self._pace()

    def _pace(self) -> None:
        """Tick in a second while tasks run; when the ETA's text changes otherwise (a
        minute's step once it is an hour away); not at all when nothing moves."""
        if self._closed:
            return
        wait = None
        if self._running():
            wait = 1.0
        elif self.live is not None and (finish := self.live.forecast.finish) is not None:
            f = self.live.forecast
            p50 = f.finish_p50 if f.finish_p50 is not None else finish
            left = (f.at(p50) - datetime.now().astimezone()).total_seconds()
            if left > 0:
                wait = (left % 60) + 0.05 if left >= 3600 else (left % 1) + 0.05
        if wait is None:
            self._tick.stop()
        elif not self._tick.isActive() or self._tick.remainingTime() > wait * 1000:
            self._tick.start(int(wait * 1000))

    def _expected(self) -> dict:
        workflow = self.window.workflow
        if workflow is None:
            return {}
        return {tid: d.expected for tid, d in workflow.tasks.items() if d.expected is not None}

    # -- answers ----------------------------------------------------------------------
    def show(self, live: Live | None) -> None:
        if not self.window.scheduler.owner_alive:
            live = None  # a watched run whose owner died: nothing runs it, nothing to tell
        self.live = live
        self.show_eta()
        self._show_critical_path()
        self._show_badges()
        self._show_ghosts()
        self.refresh_slow()
        self._pace()

    def _states_changed(self, changed: dict) -> None:
        if self.live is None or self.hidden:
            return
        if getattr(self.window, "started", True) and not self._active():
            self.show(None)  # the run is over: no ETA, ghost or ring beside 'finished'
            return
        if any(tid in changed for tid in self._ringed):
            self._show_critical_path()
        if any(tid in changed for tid in self.badges):
            self._show_badges()

    def set_hidden(self, hidden: bool) -> None:
        """Hide the live forecast's marks on the graph (a past run is shown), or show
        them again."""
        self.hidden = hidden
        self._show_critical_path()
        self._show_badges()
        self.refresh_slow()

    def tick(self) -> None:
        """As time passes (paced by ``_pace``): the ETA, the slow rings, the inspector's
        note."""
        self.show_eta()
        self.refresh_slow()
        now = datetime.now().astimezone()
        if any(at < now for at in self.badge_times.values()):
            self._show_badges()  # a task waits past its forecast start: it starts now at best
            self.forecaster.request()  # and a forecast from now says when

    def show_eta(self) -> None:
        """The ETA as of now: none before Start; paused while paused; never a past time
        (time catching up with it asks for a new forecast)."""
        live = self.live if getattr(self.window, "started", True) else None
        now = datetime.now().astimezone()
        text, tip = eta_texts(live, now, bool(getattr(self.window, "dispatcher_paused", False)))
        if live is not None and (finish := live.forecast.finish) is not None and text:
            f = live.forecast
            p50 = f.finish_p50 if f.finish_p50 is not None else finish
            if f.at(p50) <= now:  # overdue: a forecast from now says how far
                self.forecaster.request()
        self.eta.setText(text)
        self.eta.setToolTip(tip)
        self.eta.setVisible(bool(text))

    def _show_critical_path(self) -> None:
        """The ring and edges of the critical path, on work still to do only (a finished
        or failed task is not on the way to the finish any more)."""
        scene = self.window.scene
        path = QPainterPath()
        live = None if self.hidden else self.live
        chain = live.forecast.critical_path if live is not None else []
        live_tasks = self.window.bridge.tasks  # the run's states now (the scene recolours later)
        chain = [t for t in chain if t in live_tasks and not live_tasks[t].state.settled]
        self._ringed = set(chain)
        for up, down in zip(chain, chain[1:], strict=False):
            if up in scene.nodes and down in scene.nodes and scene.graph.has_edge(up, down):
                path.addPath(scene.edge_path(up, down))
        # A task inside a collapsed group rings the group's card (once).
        rep_of = getattr(getattr(scene, "view_model", None), "rep_of", {})
        ringed: set[str] = set()
        for tid in chain:
            rep = tid if tid in scene.nodes else rep_of.get(tid, tid)
            item = scene.item_of(rep) if hasattr(scene, "item_of") else scene.nodes.get(rep)
            if item is not None and rep not in ringed:
                ringed.add(rep)
                path.addRoundedRect(item.sceneBoundingRect().adjusted(-2, -2, 2, 2), 10, 10)
        self.critical.setPath(path)

    def _show_badges(self) -> None:
        """Each waiting task's expected start, just under its card (on the card it hid
        the recurring and paused marks). A start the forecast put in the past (it is
        seconds old, and work ran longer than it said) reads as now: never a past time."""
        scene = self.window.scene
        # Cards with an item (a big graph draws the rest in bulk: no badge, no item made).
        cards = getattr(scene.nodes, "made", scene.nodes)
        live = self.live if not self.hidden else None
        starts = live.forecast.starts if live is not None else {}
        wanted: dict[str, str] = {}
        now = datetime.now().astimezone()
        earliest = now.replace(microsecond=0) + timedelta(seconds=OVERDUE_STEP)
        self.badge_times = {}
        for tid, info in self.window.bridge.tasks.items():
            if len(wanted) >= BADGE_LIMIT or live is None:
                break
            if info.state in WAITING and tid in starts and tid in cards:
                at = live.forecast.at(starts[tid])
                if at < now:
                    at = earliest
                self.badge_times[tid] = at
                wanted[tid] = "≈ " + clock_text(at, now)[-8:]
        for tid in list(self.badges):
            old = self.badges[tid]
            if not shiboken6.isValid(old):  # its card was rebuilt (a filter, a group)
                del self.badges[tid]
            elif tid not in wanted or tid not in cards:
                del self.badges[tid]
                if old.scene() is not None:
                    old.scene().removeItem(old)
        for tid, text in wanted.items():
            badge = self.badges.get(tid)
            node = cards[tid]
            if badge is None or badge.parentItem() is not node:
                if badge is not None and badge.scene() is not None:
                    badge.scene().removeItem(badge)
                badge = self.badges[tid] = QGraphicsSimpleTextItem(node)
                font = QFont()
                font.setPointSizeF(8)
                badge.setFont(font)
                badge.setBrush(self.window.palette().color(QPalette.ColorRole.Text))
            if badge.text() != text:
                badge.setText(text)
                badge.setToolTip("expected start (forecast)")
            badge.setPos(8, NODE_HEIGHT + 4)  # clear of the critical path ring

    def _view_changed(self) -> None:
        """Zoomed out past what the forecast shown looks at: one that reaches it."""
        if self.live is not None and self.window.timeline.canvas.horizon > self._shown_horizon + 1:
            self.forecaster.request()

    def _computing(self, horizon: float) -> None:
        if horizon > self._shown_horizon + 1.0:
            model = self.window.timeline.model
            self.window.timeline.set_forecast_reach(
                model.forecast_reach, True, model.forecast_end_note
            )

    def _show_reach(self) -> None:
        timeline = self.window.timeline
        if self.live is None:
            self._shown_horizon = 0.0
            timeline.set_forecast_reach(None, False)
            return
        f = self.live.forecast
        self._shown_horizon = f.horizon or 0.0
        if len(f.runs) >= MAX_RUNS:
            note = f"the forecast stops after {MAX_RUNS:,} simulated runs"
        elif f.horizon is not None and f.reached < f.horizon:
            note = "nothing more is scheduled after it"
        else:
            note = "the forecast looked this far ahead"
        timeline.set_forecast_reach(f.origin + f.reached, False, note)

    def _show_ghosts(self) -> None:
        self._show_reach()
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
        self._tell_inspector(model)
        slow = set()
        if model is not None and not self.hidden:
            for tid, info in scene.tasks.items():
                if info.state is TaskState.RUNNING:
                    elapsed = self.window._running_for(tid)
                    if elapsed is not None and model.is_slow(tid, elapsed):
                        slow.add(tid)
        if slow == self.slow and all(
            shiboken6.isValid(n) for n in (scene.nodes.get(t) for t in slow) if n is not None
        ):
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

    def _tell_inspector(self, model) -> None:
        """The inspector's duration trend compares with the same history as the ring
        (every stored run's successes), not only the attempts it lists."""
        trend = getattr(self.window.inspector, "trend", None)
        tid = self.window.inspector.task_id
        if trend is None:
            return
        usual = None
        if model is not None and tid is not None and model.has_history(tid):
            stats = model.stats(tid)
            usual = stats.p90 if stats.runs >= SLOW_MIN_RUNS else None
        trend.set_usual(usual)

    def close(self) -> None:
        self._closed = True
        self._tick.stop()
        self.forecaster.close()
