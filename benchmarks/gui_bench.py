"""Benchmark the monitor window: first paint of big graphs, and event-loop lag under load.

    python -m benchmarks.gui_bench            # full sizes (~1.5 min on 2 cores)
    python -m benchmarks.gui_bench --quick    # small sizes (what the smoke test runs)

Runs offscreen (QT_QPA_PLATFORM=offscreen unless set). Prints a markdown table and
writes ``results/gui.json`` and ``results/gui.md``. Timings are reported against the
targets of issue #4, never asserted.

G1  layout + first paint: a random layered DAG (up to 3 deps each, fixed seed) in a
    real Scheduler (ManualClock + SyncExecutor, not started) shown in gui.MainWindow
    at 1400x900. Measured: the layout alone (gui.graph.layout.compute_layout), from
    ``MainWindow(...)`` until the graph view has painted once, and a repaint after
    10% of the nodes changed state (recolour only; median of 5).
G2  event-loop lag while a threaded Scheduler (4 workers) streams ~10,000 events/s:
    how late a 10 ms QTimer fires (p50/p99/max), with the window showing the graph.
    The graph's tasks are recurring (interval 1 h) and a feeder thread asks for
    extra runs with ``run_now()`` at a fixed rate, so every event recolours a node
    that is on screen. Once with the real EngineBridge, once with a naive bridge (one
    queued Qt signal per engine event, the textbook way) feeding the same window.
G3-G5 (issue 11, big workflows): validate and open an N-task random DAG file, and lag while
    tasks stream through the API; see benchmarks/big_workflows.py.

    python -m benchmarks.gui_bench --cases g3,g4,g5   # only the big-workflow cases
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before anything imports Qt

from PySide6.QtCore import QEvent, QEventLoop, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import QApplication

from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskState

from . import big_workflows

RESULTS = Path(__file__).resolve().parent / "results"
WINDOW_SIZE = (1400, 900)
SEED = 4

# Targets from issue #4.
PAINT_TARGET_S = {2_000: 1.0, 10_000: 3.0}
LAG_P99_TARGET_MS = 50.0

FULL = {
    "paint_sizes": [2_000, 10_000],
    "lag_sizes": [200, 2_000],
    "events_per_s": 10_000,
    "lag_seconds": 10.0,
    "workers": 4,
    "validate_sizes": [10_000],
    "open_sizes": [10_000],
    "stream": {"noop via API": 20_000, "true commands": 2_000, "1 ms calls": 2_000},
}
QUICK = {
    "paint_sizes": [150, 600],
    "lag_sizes": [40],
    "events_per_s": 2_000,
    "lag_seconds": 1.5,
    "workers": 4,
    "validate_sizes": [300],
    "open_sizes": [400],
    "stream": {"noop via API": 400, "true commands": 40, "1 ms calls": 100},
}
CASES = ("g1", "g2", "g3", "g4", "g5")
BRIDGES = ("taskloom", "naive")


def noop() -> None:
    return None


# ---------------------------------------------------------------------- graphs
def layered_dag(n: int, seed: int = SEED) -> list[tuple[str, list[str]]]:
    """``n`` tasks in layers of random width; each depends on 1-3 tasks of the layer before.

    Returned in topological order as (id, deps).
    """
    rng = random.Random(seed)
    width = max(2, round(n**0.5))
    layers: list[list[str]] = []
    made = 0
    while made < n:
        size = min(n - made, rng.randint(width // 2, width * 3 // 2))
        layers.append([f"t{made + i}" for i in range(size)])
        made += size
    tasks: list[tuple[str, list[str]]] = [(tid, []) for tid in layers[0]]
    for before, layer in zip(layers, layers[1:], strict=False):
        for tid in layer:
            tasks.append((tid, rng.sample(before, min(len(before), rng.randint(1, 3)))))
    return tasks


def edges_of(dag) -> list[tuple[str, str]]:
    return [(dep, tid) for tid, deps in dag for dep in deps]


# ---------------------------------------------------------------------- Qt helpers
def process_until(done, timeout: float) -> bool:
    """Run the Qt event loop until ``done()`` is true (or ``timeout`` seconds passed),
    as the app runs it: asleep until something happens, ``done`` checked every 5 ms.
    (processEvents() in a loop spun the GUI thread and took the GIL from the engine's
    threads and the window's workers: every figure measured so was biased.)"""
    if done():
        return True
    loop, deadline = QEventLoop(), time.perf_counter() + timeout
    check = QTimer()
    check.timeout.connect(lambda: (done() or time.perf_counter() > deadline) and loop.quit())
    check.start(5)
    loop.exec()
    check.stop()
    return bool(done())


def run_loop_for(seconds: float) -> None:
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def open_window(scheduler):
    """A MainWindow at 1400x900 with throwaway settings (never the user's geometry)."""
    from taskloom.gui.main_window import MainWindow

    ini = Path(tempfile.mkdtemp(prefix="taskloom-bench-")) / "bench.ini"
    window = MainWindow(scheduler, settings=QSettings(str(ini), QSettings.Format.IniFormat))
    window.resize(*WINDOW_SIZE)
    window.show()
    return window


def close_window(window) -> None:
    window.close()
    window.deleteLater()
    # processEvents() alone leaves deferred deletes for a later event loop: the next
    # measurement would pay for tearing down this window's scene.
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QApplication.processEvents()


def fresh_heap() -> None:
    """Collect the last measurement's garbage now, not during the next one."""
    gc.collect()


def graph_is_drawn(window, nodes: int, edges: int) -> bool:
    """Every node made and placed, and the edges path built (big scenes do both in slices).

    A scene that draws groups (``is_drawn``) says itself when what it shows is placed.
    """
    scene = window.scene
    if hasattr(scene, "is_drawn"):
        return scene.is_drawn() and (edges == 0 or not scene.edges_item.path().isEmpty())
    return (
        scene.layout is not None
        and len(scene.nodes) == nodes
        and all(tid in scene.layout.positions for tid in scene.nodes)
        and not getattr(scene, "building", False)
        and (edges == 0 or not scene.edges_item.path().isEmpty())
    )


# ---------------------------------------------------------------------- G1: first paint
def measure_first_paint(n: int) -> dict:
    from taskloom.gui.graph.layout import compute_layout

    fresh_heap()
    dag = layered_dag(n)
    edges = edges_of(dag)
    started = time.perf_counter()
    compute_layout([tid for tid, _ in dag], edges)
    layout_s = time.perf_counter() - started

    scheduler = Scheduler(workers=4, clock=ManualClock(), executor=SyncExecutor())
    for tid, deps in dag:
        scheduler.add(noop, name=tid, deps=deps)
    started = time.perf_counter()
    window = open_window(scheduler)
    window_s = time.perf_counter() - started
    placed = process_until(lambda: graph_is_drawn(window, n, len(edges)), timeout=60.0)
    placed_s = time.perf_counter() - started
    view = window.graph_view
    view.viewport().grab()
    paint_s = time.perf_counter() - started

    # Recolour 10% of the nodes (state only, structure unchanged) and repaint, 5 times.
    rng = random.Random(SEED)
    chosen = rng.sample([tid for tid, _ in dag], max(1, n // 10))
    repaints = []
    states = [TaskState.RUNNING, TaskState.SUCCEEDED]
    for round_ in range(5):
        changed = {
            tid: window.scene.tasks[tid]._replace(state=states[round_ % 2]) for tid in chosen
        }
        t0 = time.perf_counter()
        structural = window.scene.update_tasks(changed)
        view.viewport().grab()
        repaints.append(time.perf_counter() - t0)
        assert not structural
    idle = []
    for _ in range(3):
        t0 = time.perf_counter()
        view.viewport().grab()
        idle.append(time.perf_counter() - t0)
    result = {
        "nodes": n,
        "edges": len(edges),
        "layers": window.scene.layout.layers if window.scene.layout else None,
        "layout_s": layout_s,
        "window_s": window_s,
        "placed_s": placed_s,
        "first_paint_s": paint_s,
        "placed": placed,
        "repaint_10pct_ms": 1000 * statistics.median(repaints),
        "repaint_idle_ms": 1000 * statistics.median(idle),
        "zoom": view.zoom_level(),
        "target_s": PAINT_TARGET_S.get(n),
    }
    close_window(window)
    scheduler.shutdown(wait=True)
    return result


# ---------------------------------------------------------------------- G2: lag under load
class LagProbe(QObject):
    """A 10 ms timer that records how late each tick is (the event loop's lag)."""

    def __init__(self, interval_ms: int = 10):
        super().__init__()
        self.interval = interval_ms / 1000.0
        self.lateness: list[float] = []
        self._last = None
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self._last = time.perf_counter()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.lateness.append(max(0.0, now - self._last - self.interval))
        self._last = now

    def summary(self) -> dict:
        ms = sorted(1000 * x for x in self.lateness) or [0.0]
        return {
            "ticks": len(self.lateness),
            "lag_p50_ms": statistics.median(ms),
            "lag_p99_ms": ms[min(len(ms) - 1, int(0.99 * len(ms)))],
            "lag_max_ms": ms[-1],
        }


class NaiveBridge(QObject):
    """The textbook peer: one queued signal per engine event, applied one at a time.

    It feeds the same window slots the real bridge feeds (state changes, the event
    log, the timeline), so only the crossing into the GUI thread differs.
    """

    eventArrived = Signal(object)

    def __init__(self, scheduler, window):
        super().__init__()
        self.window = window
        self.received = 0
        self.tasks = {t.id: t for t in scheduler.tasks()}
        self.eventArrived.connect(self._apply, Qt.ConnectionType.QueuedConnection)
        self._unsubscribe = scheduler.subscribe(self._on_event)

    def _on_event(self, event) -> None:  # engine delivery thread
        self.received += 1
        self.eventArrived.emit(event)

    def _apply(self, event) -> None:  # GUI thread, once per event
        info = self.tasks.get(event.task_id)
        if info is not None and event.state is not None:
            info = self.tasks[event.task_id] = info._replace(
                state=event.state, attempt=event.attempt, run_at=event.run_at, error=event.error
            )
            self.window._on_tasks_changed({event.task_id: info})
        self.window.event_log.add_events([event])
        self.window.timeline.add_events([event])

    def close(self) -> None:
        self._unsubscribe()


class Feeder(threading.Thread):
    """Asks for ``runs_per_s`` extra runs of the graph's recurring tasks, round robin."""

    def __init__(self, scheduler, ids: list[str], runs_per_s: float):
        super().__init__(name="bench-feeder", daemon=True)
        self.scheduler = scheduler
        self.ids = ids
        self.rate = runs_per_s
        self.requested = 0
        self.refused = 0
        self.stop_flag = threading.Event()

    def run(self) -> None:
        started = time.perf_counter()
        index = 0
        while not self.stop_flag.is_set():
            due = int((time.perf_counter() - started) * self.rate)
            while self.requested < due:
                tid = self.ids[index % len(self.ids)]
                index += 1
                if self.scheduler.run_now(tid):
                    self.requested += 1
                else:  # still running from its last turn (overlap="skip")
                    self.refused += 1
                    if self.refused % len(self.ids) == 0:
                        break
            self.stop_flag.wait(0.002)


def recurring_graph(n: int, workers: int) -> tuple[Scheduler, list[str]]:
    """A started Scheduler whose ``n`` recurring tasks form a layered DAG, all SCHEDULED.

    A recurring task with recurring upstreams is released once each upstream has
    succeeded, so one warm-up run per layer (in order) brings every task to SCHEDULED.
    """
    dag = layered_dag(n)
    scheduler = Scheduler(workers=workers)
    for tid, deps in dag:
        scheduler.schedule_every(noop, 3600.0, name=tid, deps=deps)
    scheduler.start()
    never_ran = [tid for tid, _ in dag]
    deadline = time.perf_counter() + 60.0
    while never_ran and time.perf_counter() < deadline:
        for tid in never_ran:
            scheduler.run_now(tid)  # refused while still PENDING: its layer comes later
        time.sleep(0.05)
        never_ran = [t.id for t in scheduler.tasks() if t.attempt == 0]
    process_until(lambda: not pending_tasks(scheduler), timeout=10.0)
    pending = pending_tasks(scheduler)
    if pending:
        raise RuntimeError(f"warm-up left {len(pending)} tasks not SCHEDULED")
    return scheduler, [tid for tid, _ in dag]


def pending_tasks(scheduler) -> list[str]:
    return [t.id for t in scheduler.tasks() if t.state is not TaskState.SCHEDULED]


def events_per_run(scheduler, tid: str) -> int:
    """How many events one run_now() of a scheduled recurring task produces."""
    seen = []
    done = threading.Event()

    def count(event) -> None:
        seen.append(event.kind)
        if event.kind == "scheduled":
            done.set()

    unsubscribe = scheduler.subscribe(count)
    scheduler.run_now(tid)
    done.wait(5.0)
    scheduler.wait(1.0)
    unsubscribe()
    return max(1, len(seen))


def measure_lag(n: int, bridge: str, events_per_s: int, seconds: float, workers: int) -> dict:
    fresh_heap()
    scheduler, ids = recurring_graph(n, workers)
    per_run = events_per_run(scheduler, ids[0])
    window = open_window(scheduler)
    edges = sum(len(t.deps) for t in scheduler.tasks())
    process_until(lambda: graph_is_drawn(window, n, edges), timeout=60.0)
    window.graph_view.viewport().grab()
    naive = None
    if bridge == "naive":
        window.bridge.close()  # the window's own bridge stops listening; the peer feeds it
        naive = NaiveBridge(scheduler, window)
    run_loop_for(0.3)  # settle: first layout, first paint, timers started

    received_before = naive.received if naive else window.bridge.received()
    probe = LagProbe()
    feeder = Feeder(scheduler, ids, events_per_s / per_run)
    probe.start()
    started = time.perf_counter()
    feeder.start()
    run_loop_for(seconds)
    feeder.stop_flag.set()
    feeder.join()
    elapsed = time.perf_counter() - started
    probe.stop()
    received = (naive.received if naive else window.bridge.received()) - received_before

    # How long the window needs to show the last event once the stream stops.
    stopped = time.perf_counter()
    scheduler.wait(10.0)
    last_seq = scheduler.snapshot()[0]
    caught_up = process_until(lambda: last_event_seq(window) >= last_seq, timeout=60.0)
    catch_up_s = time.perf_counter() - stopped

    result = {
        "nodes": n,
        "bridge": bridge,
        "seconds": elapsed,
        "events_per_run": per_run,
        "events_per_s": received / elapsed,
        "runs_per_s": feeder.requested / elapsed,
        "target_events_per_s": events_per_s,
        "catch_up_s": catch_up_s if caught_up else None,
        "lag_target_ms": LAG_P99_TARGET_MS,
        **probe.summary(),
    }
    if naive is not None:
        naive.close()
    close_window(window)
    scheduler.shutdown(wait=True)
    return result


def last_event_seq(window) -> int:
    """The seq of the newest event the window's event log shows."""
    model = window.event_log.model
    events = getattr(model, "events", None)
    if events:
        return events[-1].seq
    return -1


# ---------------------------------------------------------------------- report
def median_of(runs: list[dict]) -> dict:
    """The median of every number over the runs (the runs themselves kept under "runs")."""
    merged = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float | int) and not isinstance(value, bool):
            values = [run[key] for run in runs if run[key] is not None]
            middle = statistics.median(values) if values else None
            counts = all(isinstance(v, int) for v in values)
            merged[key] = round(middle) if counts and middle is not None else middle
    merged["runs"] = runs
    return merged


def machine() -> dict:
    from importlib.metadata import version

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "pyside6": version("PySide6-Essentials"),
        "qpa": os.environ.get("QT_QPA_PLATFORM"),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_avg_1m_at_start": _load_average(),
    }


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _verdict(value: float | None, target: float | None) -> str:
    if value is None or target is None:
        return ""
    return "✓" if value <= target else "✗"


def markdown(results: dict) -> str:
    lines = (
        []
        if not results["paint"]
        else [
            "| G1 first paint | nodes | edges | layout (s) | window + layout + first paint (s) "
            "| target | repaint after 10% recolour (ms) | idle repaint (ms) |",
            "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
        ]
    )
    for r in results["paint"]:
        target = r["target_s"]
        target_text = f"< {target:g} s {_verdict(r['first_paint_s'], target)}" if target else "—"
        lines.append(
            f"| layered DAG | {r['nodes']:,} | {r['edges']:,} | {r['layout_s']:.3f} "
            f"| {r['first_paint_s']:.3f} | {target_text} | {r['repaint_10pct_ms']:.1f} "
            f"| {r['repaint_idle_ms']:.1f} |"
        )
    lines += (
        []
        if not results["lag"]
        else [
            "",
            "| G2 event-loop lag (10 ms QTimer) | nodes | bridge | events/s | runs/s | ticks "
            "| p50 (ms) | p99 (ms) | max (ms) | target p99 < 50 ms | catch-up after stop (s) |",
            "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
        ]
    )
    for r in results["lag"]:
        catch_up = "—" if r["catch_up_s"] is None else f"{r['catch_up_s']:.2f}"
        label = "Taskloom (coalescing)" if r["bridge"] == "taskloom" else "naive (signal/event)"
        lines.append(
            f"| streaming | {r['nodes']:,} | {label} | {r['events_per_s']:,.0f} "
            f"| {r['runs_per_s']:,.0f} | {r['ticks']:,} | {r['lag_p50_ms']:.1f} "
            f"| {r['lag_p99_ms']:.1f} | {r['lag_max_ms']:.1f} "
            f"| {_verdict(r['lag_p99_ms'], LAG_P99_TARGET_MS)} | {catch_up} |"
        )
    lines += big_workflows.markdown(results, _verdict)
    m = results["machine"]
    lines += [
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu']}), Python {m['python']}, PySide6 {m['pyside6']}, "
        f"QPA {m['qpa']}, {m['platform']}; {m['date']}; load average "
        f"{m['load_avg_1m_at_start']} at start, {m.get('load_avg_1m_at_end')} at end.",
        f"Every number is the median of {results['repeats']} run(s) (each run is in gui.json). "
        "G1: gui.MainWindow at 1400x900 on a Scheduler(ManualClock, SyncExecutor) that is not "
        "started; first paint = from MainWindow(...) until every node (or, above 300 tasks, "
        "every collapsed group) is made and placed, the edges are built and "
        "graphView.viewport().grab() returned. Recolour = "
        "scene.update_tasks() on 10% of the nodes + grab(), median of 5.",
        "G2: Scheduler(workers=4) on real threads; the graph's tasks are recurring (1 h) and a "
        "feeder thread calls run_now() round robin at events/s ÷ events per run; lag = how late "
        "a 10 ms PreciseTimer fires (ticks: how often it fired; ~100/s when the loop is free). "
        "Naive bridge = one queued Signal per engine event into the "
        "same window slots (benchmarks/gui_bench.py NaiveBridge). Catch-up = from the end of "
        "the stream until the event log shows the last event.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gui_bench")
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for gui.json/.md")
    parser.add_argument("--repeats", type=int, help="runs per measurement (default 3, quick 1)")
    parser.add_argument(
        "--cases", default=",".join(CASES), help="which cases to run (default: all): g1,...,g5"
    )
    args = parser.parse_args(argv)
    cases = set(args.cases.split(","))
    if not cases <= set(CASES):
        parser.error(f"--cases: unknown {sorted(cases - set(CASES))}; choose from {CASES}")
    sizes = QUICK if args.quick else FULL
    repeats = args.repeats or (1 if args.quick else 3)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Taskloom benchmark")

    results = {
        "quick": args.quick,
        "sizes": sizes,
        "repeats": repeats,
        "machine": machine(),
        "cases": sorted(cases),
        "paint": [],
        "lag": [],
        "validate": [],
        "open": [],
        "stream": [],
    }
    started = time.perf_counter()
    for n in sizes["paint_sizes"] if "g1" in cases else ():
        r = median_of([measure_first_paint(n) for _ in range(repeats)])
        results["paint"].append(r)
        print(f"G1 {n} nodes: first paint {r['first_paint_s']:.3f} s", file=sys.stderr)
    for n in sizes["lag_sizes"] if "g2" in cases else ():
        for bridge in BRIDGES:
            options = (sizes["events_per_s"], sizes["lag_seconds"], sizes["workers"])
            r = median_of([measure_lag(n, bridge, *options) for _ in range(repeats)])
            results["lag"].append(r)
            print(f"G2 {n} nodes {bridge}: p99 {r['lag_p99_ms']:.1f} ms", file=sys.stderr)
    for n in sizes["validate_sizes"] if "g3" in cases else ():
        r = median_of([big_workflows.measure_validate(n) for _ in range(repeats)])
        results["validate"].append(r)
        print(f"G3 validate {n}: {r['validate_s']:.2f} s", file=sys.stderr)
    for n in sizes["open_sizes"] if "g4" in cases else ():
        fresh_heap()
        r = median_of(
            [big_workflows.measure_open(n, process_until, LagProbe) for _ in range(repeats)]
        )
        results["open"].append(r)
        print(f"G4 open {n}: drawn {r['drawn_s']} s", file=sys.stderr)
    for kind, n in sizes["stream"].items() if "g5" in cases else ():
        fresh_heap()
        runs = [
            big_workflows.measure_stream(
                kind, n, open_window, close_window, process_until, LagProbe
            )
            for _ in range(repeats)
        ]
        r = median_of(runs)
        results["stream"].append(r)
        print(f"G5 {kind} {n}: p99 {r['lag_p99_ms']:.1f} ms", file=sys.stderr)
    results["elapsed_s"] = time.perf_counter() - started
    results["machine"]["load_avg_1m_at_end"] = _load_average()

    table = markdown(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gui.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "gui.md").write_text(table)
    print(table)
    print(f"wrote {args.out / 'gui.json'} and gui.md in {results['elapsed_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
