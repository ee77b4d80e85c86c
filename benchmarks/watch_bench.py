"""What watching costs the owner, and how far behind a watcher is: side by side.

    python -m benchmarks.watch_bench [--quick]

An owner (``Scheduler`` on 4 workers with a ``SQLiteStore`` and the watchers'
``FeedWriter``, as ``taskloom run`` has) runs no-op tasks and tasks that sleep
5 ms, with no feed at all, with the feed and 0 watchers, and with 1 and 3
watchers attached: each a separate process following the run through a
``WatchedRun`` (what a watching window's bridge reads). Owner throughput is
tasks/s from ``start()`` to ``wait()``; medians of 3 runs (``--repeats``), configurations
interleaved (each round starting with another one) so that drift on a shared
machine hits all of them alike. Watcher
lag is, for every task, when a watcher first hears that it succeeded minus when
a listener in the owner heard it (the owner reports a success once it is on
disk; same host, one wall clock); p50/p99 over all tasks, watchers and runs. A
window adds at most one bridge batch (33 ms) on top. CPU: the owner process's
and each watcher's, from start to the owner's ``wait()``, per 1,000 tasks (medians):
on a shared machine less noisy than throughput, whose spread over the runs of
each configuration (slowest and fastest run / median) is given too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from taskloom.engine import Call, Scheduler
from taskloom.engine.feed import FeedWriter
from taskloom.engine.store import SQLiteStore

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("no feed", "0 watchers", "1 watcher", "3 watchers")


def noop() -> None:
    pass


def sleep_5ms() -> None:
    time.sleep(0.005)


def watcher_main(db: str, ready: str, out: str) -> int:
    """A watcher process: follow the run until its owner stops; write the lags."""
    from taskloom.engine.watched_run import WatchedRun

    seen: dict[str, float] = {}  # task -> when this watcher first heard it succeeded

    def on_event(event) -> None:
        if event.kind == "succeeded" and event.task_id not in seen:
            seen[event.task_id] = time.time()

    run = WatchedRun(db, attach_timeout=30)
    run.subscribe(on_event)
    cpu = time.process_time()
    Path(ready).touch()
    while run.owner_alive:
        time.sleep(0.05)
    cpu = time.process_time() - cpu
    run.close()
    Path(out).write_text(json.dumps({"seen": seen, "cpu": cpu}))
    return 0


def one_run(task: str, count: int, config: str) -> tuple[float, list[float], float, list[float]]:
    """(owner tasks/s, lags, owner CPU seconds, each watcher's CPU seconds)."""
    watchers = {"1 watcher": 1, "3 watchers": 3}.get(config, 0)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        store = SQLiteStore(db)
        scheduler = Scheduler(workers=4, store=store, log_dir=tmp)
        fn = Call(f"benchmarks.watch_bench:{task}")
        for _ in range(count):
            scheduler.add(fn)
        told: dict[str, float] = {}  # task -> when the owner's own listener heard it succeed

        def on_event(event) -> None:
            if event.kind == "succeeded":
                told.setdefault(event.task_id, time.time())

        scheduler.subscribe(on_event)  # in every configuration, so each pays the same
        feed = None if config == "no feed" else FeedWriter(scheduler, store).start()
        procs = []
        for n in range(watchers):
            ready, out = Path(tmp) / f"ready{n}", Path(tmp) / f"lags{n}.json"
            argv = [sys.executable, "-m", "benchmarks.watch_bench", "--watcher", str(db)]
            procs.append((subprocess.Popen([*argv, str(ready), str(out)], cwd=ROOT), ready, out))
        for proc, ready, _ in procs:
            while not ready.exists():
                if proc.poll() is not None:
                    raise RuntimeError(f"a watcher exited with {proc.returncode}")
                time.sleep(0.01)
        started, cpu = time.perf_counter(), time.process_time()
        scheduler.start()
        scheduler.wait()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        scheduler.shutdown()
        if feed is not None:
            feed.close()  # tells the watchers the owner stopped
        store.close()
        lags: list[float] = []
        watcher_cpu: list[float] = []
        for proc, _, out in procs:
            proc.wait(60)
            heard = json.loads(out.read_text())
            lags.extend(at - told[tid] for tid, at in heard["seen"].items())
            watcher_cpu.append(heard["cpu"])
    return count / elapsed, lags, cpu, watcher_cpu


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small run of each")
    parser.add_argument(
        "--watcher", nargs=3, metavar=("DB", "READY", "OUT"), help=argparse.SUPPRESS
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the results go")
    parser.add_argument("--repeats", type=int, default=3, help="runs per configuration")
    args = parser.parse_args(argv)
    if args.watcher:
        return watcher_main(*args.watcher)
    repeats = 1 if args.quick else max(1, args.repeats)
    sizes = {"noop": 300 if args.quick else 10_000, "sleep_5ms": 60 if args.quick else 2_000}
    rows: dict = {}
    for task, count in sizes.items():
        rates: dict[str, list[float]] = {c: [] for c in CONFIGS}
        lags: dict[str, list[float]] = {c: [] for c in CONFIGS}
        cpus: dict[str, list[float]] = {c: [] for c in CONFIGS}
        watcher_cpus: dict[str, list[float]] = {c: [] for c in CONFIGS}
        for r in range(repeats):
            # interleaved, each repeat starting one configuration later: the first
            # of a round ran faster or slower often enough to matter
            for config in CONFIGS[r % len(CONFIGS) :] + CONFIGS[: r % len(CONFIGS)]:
                rate, found, cpu, watcher_cpu = one_run(task, count, config)
                rates[config].append(rate)
                lags[config].extend(found)
                cpus[config].append(cpu)
                watcher_cpus[config].extend(watcher_cpu)
        base = statistics.median(rates["no feed"])
        rows[task] = {
            "tasks": count,
            "configs": {
                c: {
                    "tasks_per_s": statistics.median(rates[c]),
                    "runs_tasks_per_s": [round(rate) for rate in rates[c]],
                    "vs_no_feed": statistics.median(rates[c]) / base,
                    "lag_p50_ms": None if not lags[c] else 1000 * _pct(lags[c], 0.5),
                    "lag_p99_ms": None if not lags[c] else 1000 * _pct(lags[c], 0.99),
                    "successes_seen": len(lags[c]),
                    "spread": [
                        min(rates[c]) / statistics.median(rates[c]),
                        max(rates[c]) / statistics.median(rates[c]),
                    ],
                    "owner_cpu_ms_per_1k": 1e6 * statistics.median(cpus[c]) / count,
                    "watcher_cpu_ms_per_1k": None
                    if not watcher_cpus[c]
                    else 1e6 * statistics.median(watcher_cpus[c]) / count,
                }
                for c in CONFIGS
            },
        }
    lines = [
        "| tasks | owner | tasks/s | vs no feed | runs / median | watcher lag p50 | p99 |"
        " owner CPU / 1k tasks | each watcher's |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for task, row in rows.items():
        for config, r in row["configs"].items():
            p50 = "—" if r["lag_p50_ms"] is None else f"{r['lag_p50_ms']:.0f} ms"
            p99 = "—" if r["lag_p99_ms"] is None else f"{r['lag_p99_ms']:.0f} ms"
            low, high = r["spread"]
            mine = r["watcher_cpu_ms_per_1k"]
            theirs = "—" if mine is None else f"{mine:.0f} ms"
            lines.append(
                f"| {row['tasks']:,} {task} | {config} | {r['tasks_per_s']:,.0f} | "
                f"{r['vs_no_feed']:.2f} | {low:.2f}–{high:.2f} | {p50} | {p99} | "
                f"{r['owner_cpu_ms_per_1k']:.0f} ms | {theirs} |"
            )
    table = "\n".join(lines)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    machine = {"nproc": os.cpu_count(), "python": sys.version.split()[0]}
    mode = "quick" if args.quick else "full"
    result = {"mode": mode, "repeats": repeats, "machine": machine, "results": rows}
    (args.out / "watch.json").write_text(json.dumps(result, indent=2))
    (args.out / "watch.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
