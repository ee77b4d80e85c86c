"""The cases of issue 11 (big workflows in the window), measured by gui_bench.

G3  ``taskloom validate`` of an N-task random DAG file (each task depends on up to 3
    earlier ones, fixed seed), run as a subprocess: wall time.
G4  opening that file in the window as ``taskloom FILE`` does (Sessions.open on a
    fresh store; its ``true`` commands start running): until the window is shown,
    and until the graph is drawn (every node or group made and placed, edges built).
    Also the longest event-loop stall (10 ms probe timer) until the graph was drawn.
G5  event-loop lag (a 10 ms PreciseTimer) while a window is open on a running
    Scheduler(workers=4) and tasks arrive through the API: N no-op tasks added by a
    thread; N ``true`` commands; N Python calls of 1 ms. Catch-up: from the engine's
    last event until the window shows it (event log) and its graph is drawn.

Written to run against older code too (``--before``-style baselines): it only uses
what every version of the window has, and ``scene.is_drawn()`` when it exists.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from PySide6.QtCore import QSettings

SEED = 11


def random_dag_toml(n: int, seed: int = SEED) -> str:
    """A workflow of ``n`` ``true`` commands; task i depends on up to 3 tasks before it."""
    rng = random.Random(seed)
    lines = ['[workflow]\nname = "big"\nworkers = 4\n']
    for i in range(n):
        lines.append(f'[tasks.t{i}]\ncommand = ["true"]')
        if i and rng.random() < 0.75:
            deps = sorted({f"t{rng.randrange(i)}" for _ in range(rng.randint(1, 3))})
            lines.append("deps = [" + ", ".join(f'"{d}"' for d in deps) + "]")
        lines.append("")
    return "\n".join(lines)


def write_dag(n: int, folder: Path) -> Path:
    path = folder / f"dag{n}.toml"
    path.write_text(random_dag_toml(n))
    return path


# ---------------------------------------------------------------------- G3
def measure_validate(n: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="taskloom-bench-"))
    path = write_dag(n, folder)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "taskloom", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    took = time.perf_counter() - started
    return {"tasks": n, "validate_s": took, "exit": proc.returncode, "target_s": 1.0}


# ---------------------------------------------------------------------- G4
def measure_open(n: int, process_until, lag_probe) -> dict:
    from taskloom.app import Sessions, resume_without_asking

    folder = Path(tempfile.mkdtemp(prefix="taskloom-bench-"))
    path = write_dag(n, folder)
    settings = QSettings(str(folder / "bench.ini"), QSettings.Format.IniFormat)
    probe = lag_probe()
    started = time.perf_counter()
    sessions = Sessions(settings, db=folder / "run.db", fresh=True, data_dir=folder)
    sessions.choose_run = resume_without_asking
    probe.start()  # from the open on: a GUI thread blocked by it shows as one long stall
    sessions.open(str(path))
    # A big file opens off the GUI thread behind a progress window (issue 25); older
    # code blocked in open() and then showed the workflow's window.
    process_until(lambda: any_window_shown(), timeout=60.0)
    shown_s = time.perf_counter() - started
    process_until(
        lambda: sessions.current is not None and sessions.current.window.isVisible(),
        timeout=120.0,
    )
    window = sessions.current.window
    drawn = process_until(lambda: drawn_now(window, n), timeout=60.0)
    drawn_s = time.perf_counter() - started
    probe.stop()
    scene = window.scene
    result = {
        "tasks": n,
        "shown_s": shown_s,
        "drawn_s": drawn_s if drawn else None,
        "items_drawn": len(scene.nodes) + len(getattr(scene, "group_items", {})),
        "stall_max_ms": probe.summary()["lag_max_ms"],
        "target_shown_s": 1.0,
        "target_drawn_s": 3.0,
    }
    sessions.close()
    return result


def any_window_shown() -> bool:
    from PySide6.QtWidgets import QApplication

    return any(w.isVisible() and w.isWindow() for w in QApplication.topLevelWidgets())


def drawn_now(window, n: int) -> bool:
    scene = window.scene
    if hasattr(scene, "is_drawn"):
        return scene.is_drawn()
    edges = any(info.deps for info in scene.tasks.values())
    return (
        scene.layout is not None
        and len(scene.nodes) == n
        and all(tid in scene.layout.positions for tid in scene.nodes)
        and not getattr(scene, "building", False)
        and (not edges or not scene.edges_item.path().isEmpty())
    )


# ---------------------------------------------------------------------- G5
def _noop() -> None:
    return None


def _one_ms() -> None:
    time.sleep(0.001)


KINDS = ("noop via API", "true commands", "1 ms calls")


def measure_stream(kind: str, n: int, open_window, close_window, process_until, lag_probe):
    """Lag while ``n`` tasks of ``kind`` go through a Scheduler(workers=4) the window shows."""
    from taskloom.engine import Scheduler
    from taskloom.engine.command import Command

    scheduler = Scheduler(workers=4)
    window = open_window(scheduler)
    process_until(lambda: True, timeout=0.2)
    probe = lag_probe()
    probe.start()
    started = time.perf_counter()
    if kind == "noop via API":  # added while running, by another thread (as a script would)
        scheduler.start()

        def add_all() -> None:
            for i in range(n):
                scheduler.add(_noop, name=f"n{i}")

        adder = threading.Thread(target=add_all, daemon=True)
        adder.start()
        process_until(lambda: not adder.is_alive(), timeout=600.0)
    else:
        action = Command(["true"]) if kind == "true commands" else _one_ms
        for i in range(n):
            scheduler.add(action, name=f"c{i}")
        scheduler.start()
    finished = threading.Event()
    threading.Thread(target=lambda: (scheduler.wait(600.0), finished.set()), daemon=True).start()
    process_until(finished.is_set, timeout=600.0)
    engine_done = time.perf_counter()
    last_seq = scheduler.snapshot()[0]
    caught_up = process_until(
        lambda: _last_seq(window) >= last_seq and _all_read(window, n) and drawn_now(window, n),
        timeout=60.0,
    )
    catch_up_s = time.perf_counter() - engine_done
    probe.stop()
    result = {
        "kind": kind,
        "tasks": n,
        "engine_s": engine_done - started,
        "catch_up_s": catch_up_s if caught_up else None,
        **probe.summary(),
        "lag_target_ms": 50.0,
    }
    close_window(window)
    scheduler.shutdown(wait=True)
    return result


def _all_read(window, n: int) -> bool:
    """The window knows every task (the bridge has nothing left to read or hand on):
    drawn with the last event logged was true while thousands were still unread."""
    bridge = window.bridge
    pending = bridge.pending() if hasattr(bridge, "pending") else 0
    return len(bridge.tasks) >= n and not bridge._reread_later and not pending


def _last_seq(window) -> int:
    events = getattr(window.event_log.model, "events", None)
    return events[-1].seq if events else -1


# ---------------------------------------------------------------------- report
def markdown(results: dict, verdict) -> list[str]:
    lines = []
    if results.get("validate"):
        lines += [
            "",
            "| G3 validate | tasks | wall time (s) | target |",
            "| --- | ---: | ---: | --- |",
        ]
        for r in results["validate"]:
            lines.append(
                f"| `taskloom validate` random DAG (≤ 3 deps) | {r['tasks']:,} "
                f"| {r['validate_s']:.2f} | < 1 s {verdict(r['validate_s'], 1.0)} |"
            )
    if results.get("open"):
        lines += [
            "",
            "| G4 open in the window | tasks | window shown (s) | graph drawn (s) "
            "| items drawn | longest stall until drawn (ms) | target |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for r in results["open"]:
            drawn = "never" if r["drawn_s"] is None else f"{r['drawn_s']:.2f}"
            lines.append(
                f"| `taskloom FILE` random DAG | {r['tasks']:,} | {r['shown_s']:.2f} | {drawn} "
                f"| {r['items_drawn']:,} | {r['stall_max_ms']:.0f} | shown < 1 s "
                f"{verdict(r['shown_s'], 1.0)}, drawn < 3 s {verdict(r['drawn_s'], 3.0)} |"
            )
    if results.get("stream"):
        lines += [
            "",
            "| G5 lag while tasks run (10 ms QTimer) | tasks | engine (s) | ticks | p50 (ms) "
            "| p99 (ms) | max (ms) | target p99 < 50 ms | catch-up (s) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
        ]
        for r in results["stream"]:
            catch_up = "—" if r["catch_up_s"] is None else f"{r['catch_up_s']:.2f}"
            lines.append(
                f"| {r['kind']}, 4 workers | {r['tasks']:,} | {r['engine_s']:.2f} "
                f"| {r['ticks']:,} | {r['lag_p50_ms']:.1f} | {r['lag_p99_ms']:.1f} "
                f"| {r['lag_max_ms']:.1f} | {verdict(r['lag_p99_ms'], 50.0)} | {catch_up} |"
            )
    if results.get("validate") or results.get("open") or results.get("stream"):
        lines += [
            "",
            "G3-G5 (benchmarks/big_workflows.py): a random DAG of `true` commands, each "
            "task after up to 3 earlier ones (seed 11). G3 runs `python -m taskloom validate`. "
            "G4 opens the file as `taskloom FILE` does (fresh store, its commands run); "
            "shown = the window is visible, drawn = what the graph shows is made and placed. "
            "G5: Scheduler(workers=4) shown in the window; no-op tasks are added by another "
            "thread while it runs, commands and 1 ms calls are added before start(); catch-up "
            "= from the engine's last event until the event log shows it and the graph is drawn.",
        ]
    return lines


# ------------------------------------------------ a person opening a big file (issue 25)
# Run in a fresh process per measurement, with the Python of the tree measured, so that
# the previous main is a column of the same run (``--before``). Only names every version
# of the window has are used.
PERSON = r"""
import json, os, resource, sys, tempfile, time
from pathlib import Path
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QCoreApplication, QEventLoop, QSettings, Qt, QTimer
from PySide6.QtWidgets import QApplication
n, path, what = int(sys.argv[1]), sys.argv[2], sys.argv[3]
app = QApplication([])
folder = Path(tempfile.mkdtemp(prefix="taskloom-bench-"))
stalls = []
last = [time.perf_counter()]
def tick():
    now = time.perf_counter()
    stalls.append(now - last[0] - 0.01)
    last[0] = now
timer = QTimer()
timer.setTimerType(Qt.TimerType.PreciseTimer)
timer.setInterval(10)
timer.timeout.connect(tick)
def until(done, limit):
    deadline = time.perf_counter() + limit
    while not done():
        if time.perf_counter() > deadline:
            return False
        # Waits for the next event (the 10 ms timer at least), as app.exec() would:
        # a busy loop here would take the GIL from the threads that open the file.
        app.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
    return True
def longest():
    value = max(stalls, default=0.0) * 1000
    stalls.clear()
    last[0] = time.perf_counter()
    return round(value)
def shown():
    return any(w.isVisible() and w.isWindow() for w in app.topLevelWidgets())
out = {"tasks": n}
from taskloom.app import Sessions, resume_without_asking
settings = QSettings(str(folder / "b.ini"), QSettings.Format.IniFormat)
started = time.perf_counter()
timer.start()
sessions = Sessions(settings, db=folder / "run.db", fresh=True, data_dir=folder, start=False)
sessions.choose_run = resume_without_asking
sessions.open(path)
until(shown, 600)
out["window_s"] = round(time.perf_counter() - started, 2)
until(lambda: sessions.current is not None and sessions.current.window.isVisible(), 600)
window = sessions.current.window
out["workflow_window_s"] = round(time.perf_counter() - started, 2)
until(window.scene.is_drawn, 600)
out["drawn_s"] = round(time.perf_counter() - started, 2)
out["open_stall_ms"] = longest()
out["items"] = len(window.scene.nodes) + len(getattr(window.scene, "group_items", {}))
until(lambda: False, 1.0)  # the window settles (history reads, forecast)
longest()
if what == "find":
    target = f"t{n // 2 + 7}"
    t = time.perf_counter()
    window.search.setText(target)
    window._find()
    ok = until(lambda: window.selected == [target] and window.scene.is_drawn(), 600)
    out["find_s"] = round(time.perf_counter() - t, 2) if ok else None
    out["find_stall_ms"] = longest()
if what == "expand":
    t = time.perf_counter()
    window.scene.expand_all()
    ok = until(window.scene.is_drawn, 900)
    out["expand_s"] = round(time.perf_counter() - t, 2) if ok else None
    out["expand_stall_ms"] = longest()
    out["expanded_items"] = len(window.scene.nodes)
out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
timer.stop()
sessions.close()
print("RESULT " + json.dumps(out))
"""


def measure_person(python: str, root: Path, n: int, path: Path, what: str, timeout: float):
    """One measurement of ``what`` ("open", "find", "expand") in a fresh process of the
    tree at ``root`` (its own venv's ``python``); None if it ran out of ``timeout``."""
    try:
        proc = subprocess.run(
            [python, "-c", PERSON, str(n), str(path), what],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{root}: {proc.stderr[-2000:]}")


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.big_workflows")
    parser.add_argument("--sizes", default="10000", help="tasks per file, comma-separated")
    parser.add_argument("--what", default="open,find,expand", help="open, find, expand")
    parser.add_argument("--before", type=Path, help="another tree (with .venv) as a column")
    parser.add_argument("--before-up-to", type=int, default=10_000, help="largest size for it")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per process")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    trees = [("now", here)]
    if args.before is not None:
        trees.insert(0, ("before", args.before.resolve()))
    folder = Path(tempfile.mkdtemp(prefix="taskloom-bench-"))
    rows = []
    for n in [int(size) for size in args.sizes.split(",")]:
        path = write_dag(n, folder)
        for what in args.what.split(","):
            row = {"tasks": n, "what": what}
            for name, root in trees:  # interleaved: the same machine state for both
                if name == "before" and n > args.before_up_to:
                    continue
                python = str(root / ".venv" / "bin" / "python")
                row[name] = measure_person(python, root, n, path, what, args.timeout)
                print(json.dumps({"tree": name, **row}), file=sys.stderr)
            rows.append(row)
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
