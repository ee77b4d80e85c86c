"""What watching costs the owner, and how far behind a watcher is: side by side.

    python -m benchmarks.watch_bench [--quick] [--before /path/to/previous/checkout]

An owner (``Scheduler`` on 4 workers with a ``SQLiteStore``, as ``taskloom run``
has) runs no-op tasks (10,000 and 30,000) and tasks that sleep 5 ms, in these
configurations: no feed at all; the watchers' feed (``FeedWriter``) with 0, 1
and 3 watchers, each a separate process following the run through a
``WatchedRun`` (what a watching window's bridge reads: task states from the
journal, the rest from the feed); and no feed with 1 and 3 bare watchers that
only tail the journal's ``events`` table ("journal": by rowid, folded with
``engine/fold.py``; the floor of what watching can cost).
``--before`` runs the same configurations of another checkout (with its own
``.venv``) in the same rounds: the "before" column. Every run is a fresh
process of its tree; configurations and trees are interleaved (each round
starting with another one) so that drift on a shared machine hits all alike.

Owner throughput is tasks/s from ``start()`` to ``wait()``. "vs no feed" is
paired: in each round, a configuration's tasks/s over its tree's no-feed run of
the same round (a shared machine drifts between rounds, less within one); the
median of those ratios over the rounds (``--repeats``, default 5), with their
range; tasks/s is the median over rounds. Watcher lag is, for every task, when
a watcher first hears that it succeeded minus when a listener in the owner
heard it (the owner reports a success once it is on disk; same host, one wall
clock); p50/p99 over all tasks, watchers and runs. A window adds at most one
bridge batch (33 ms) on top. CPU: the owner process's and each watcher's, from
start to the owner's ``wait()``, per 1,000 tasks (medians): less moved by a
busy machine than tasks/s. The load average is told with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("no feed", "0 watchers", "1 watcher", "3 watchers", "journal 1", "journal 3")
BEFORE_CONFIGS = ("no feed", "1 watcher", "3 watchers")  # what a previous tree can run
POLL = 0.1  # seconds between a journal watcher's reads (as WatchedRun's POLL_INTERVAL)


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


def journal_watcher_main(db: str, ready: str, out: str, stop: str) -> int:
    """A watcher that tails the journal's own ``events`` table by rowid (the order
    the owner's writer committed them), folding every row (``engine/fold.py``), until
    ``stop`` exists; then one last read."""
    from taskloom.engine import Event, TaskState
    from taskloom.engine.fold import TaskFold

    states = {state.value: state for state in TaskState}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    fold = TaskFold()
    seen: dict[str, float] = {}
    last = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM events").fetchone()[0]
    cpu = time.process_time()
    Path(ready).touch()
    while True:
        stopping = os.path.exists(stop)
        rows = conn.execute(
            "SELECT rowid, seq, task_id, kind, state, at, attempt, error FROM events"
            " WHERE rowid > ? ORDER BY rowid",
            (last,),
        ).fetchall()
        now = time.time()
        for rowid, seq, tid, kind, state, at, attempt, error in rows:
            fold.apply(Event(seq, kind, tid, states.get(state), at, attempt, None, error))
            if kind == "succeeded" and tid not in seen:
                seen[tid] = now
            last = rowid
        if stopping:
            break
        time.sleep(POLL)
    cpu = time.process_time() - cpu
    conn.close()
    Path(out).write_text(json.dumps({"seen": seen, "cpu": cpu}))
    return 0


def one_run(task: str, count: int, config: str) -> tuple[float, list[float], float, list[float]]:
    """(owner tasks/s, lags, owner CPU seconds, each watcher's CPU seconds)."""
    from taskloom.engine import Call, Scheduler
    from taskloom.engine.feed import FeedWriter
    from taskloom.engine.store import SQLiteStore

    journal = config.startswith("journal")
    watchers = {"1 watcher": 1, "3 watchers": 3, "journal 1": 1, "journal 3": 3}.get(config, 0)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        stop = Path(tmp) / "stop"
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
        feed = None if config == "no feed" or journal else FeedWriter(scheduler, store).start()
        procs = []
        for n in range(watchers):
            ready, out = Path(tmp) / f"ready{n}", Path(tmp) / f"lags{n}.json"
            argv = [sys.executable, "-m", "benchmarks.watch_bench"]
            if journal:
                argv += ["--journal-watcher", str(db), str(ready), str(out), str(stop)]
            else:
                argv += ["--watcher", str(db), str(ready), str(out)]
            procs.append((subprocess.Popen(argv, cwd=ROOT), ready, out))
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
        stop.touch()  # the journal watchers read once more and stop
        lags: list[float] = []
        watcher_cpu: list[float] = []
        for proc, _, out in procs:
            proc.wait(60)
            heard = json.loads(out.read_text())
            lags.extend(at - told[tid] for tid, at in heard["seen"].items())
            watcher_cpu.append(heard["cpu"])
    return count / elapsed, lags, cpu, watcher_cpu


_ONE = (
    "import json, sys; from benchmarks.watch_bench import one_run;"
    " print(json.dumps(one_run(sys.argv[1], int(sys.argv[2]), sys.argv[3])))"
)


def run_in(tree: Path, task: str, count: int, config: str):
    """``one_run`` in a fresh process of ``tree`` (its own .venv): same harness for
    this tree and a previous one."""
    python = tree / ".venv" / "bin" / "python"
    done = subprocess.run(
        [str(python), "-c", _ONE, task, str(count), config],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{tree} {task} {config}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


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
    parser.add_argument("--journal-watcher", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the results go")
    parser.add_argument(
        "--repeats", type=int, default=5, help="interleaved rounds (runs per configuration)"
    )
    parser.add_argument(
        "--before", type=Path, help="a previous checkout (with its .venv) to run alongside"
    )
    parser.add_argument(
        "--only", help="comma-separated sizes to run (noop, noop_30k, sleep_5ms)", default=""
    )
    parser.add_argument(
        "--configs",
        default="",
        help=f"comma-separated configurations to run (of: {', '.join(CONFIGS)}); no feed always",
    )
    args = parser.parse_args(argv)
    if args.watcher:
        return watcher_main(*args.watcher)
    if args.journal_watcher:
        return journal_watcher_main(*args.journal_watcher)
    repeats = 1 if args.quick else max(1, args.repeats)
    if args.quick:
        sizes = [("noop", "noop", 300), ("sleep_5ms", "sleep_5ms", 60)]
    else:
        sizes = [("noop", "noop", 10_000), ("noop_30k", "noop", 30_000)]
        sizes.append(("sleep_5ms", "sleep_5ms", 2_000))
    if args.only:
        sizes = [size for size in sizes if size[0] in args.only.split(",")]
    chosen = [c.strip() for c in args.configs.split(",")] if args.configs else list(CONFIGS)
    if "no feed" not in chosen:
        chosen.insert(0, "no feed")  # every ratio is over it
    columns = [(ROOT, config, config) for config in CONFIGS if config in chosen]
    if args.before is not None:
        columns += [(args.before, f"before: {c}", c) for c in BEFORE_CONFIGS if c in chosen]
    rows: dict = {}
    load_before = os.getloadavg()[0]  # the machine's load average, told with the figures
    for name, task, count in sizes:
        keys = [label for _, label, _ in columns]
        rates: dict[str, list[float]] = {k: [] for k in keys}
        lags: dict[str, list[float]] = {k: [] for k in keys}
        cpus: dict[str, list[float]] = {k: [] for k in keys}
        watcher_cpus: dict[str, list[float]] = {k: [] for k in keys}
        for r in range(repeats):
            # interleaved, each repeat starting one column later: the first of a
            # round ran faster or slower often enough to matter
            shift = r % len(columns)
            for tree, label, config in columns[shift:] + columns[:shift]:
                rate, found, cpu, watcher_cpu = run_in(tree, task, count, config)
                rates[label].append(rate)
                lags[label].extend(found)
                cpus[label].append(cpu)
                watcher_cpus[label].extend(watcher_cpu)

        # Paired: each round's rate over the same round's no-feed rate of its tree.
        ratios = {
            k: [
                rate / base
                for rate, base in zip(
                    rates[k], rates["before: no feed" if "before" in k else "no feed"], strict=True
                )
            ]
            for k in keys
        }

        rows[name] = {
            "tasks": count,
            "task": task,
            "configs": {
                c: {
                    "tasks_per_s": statistics.median(rates[c]),
                    "runs_tasks_per_s": [round(rate) for rate in rates[c]],
                    "vs_no_feed": statistics.median(ratios[c]),
                    "ratios_per_round": [round(ratio, 3) for ratio in ratios[c]],
                    "lag_p50_ms": None if not lags[c] else 1000 * _pct(lags[c], 0.5),
                    "lag_p99_ms": None if not lags[c] else 1000 * _pct(lags[c], 0.99),
                    "successes_seen": len(lags[c]),
                    "spread": [min(ratios[c]), max(ratios[c])],
                    "owner_cpu_ms_per_1k": 1e6 * statistics.median(cpus[c]) / count,
                    "watcher_cpu_ms_per_1k": None
                    if not watcher_cpus[c]
                    else 1e6 * statistics.median(watcher_cpus[c]) / count,
                }
                for c in keys
            },
        }
    lines = [
        "| tasks | owner | tasks/s | vs no feed | range over rounds | watcher lag p50 | p99 |"
        " owner CPU / 1k tasks | each watcher's |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows.values():
        for config, r in row["configs"].items():
            p50 = "—" if r["lag_p50_ms"] is None else f"{r['lag_p50_ms']:.0f} ms"
            p99 = "—" if r["lag_p99_ms"] is None else f"{r['lag_p99_ms']:.0f} ms"
            low, high = r["spread"]
            mine = r["watcher_cpu_ms_per_1k"]
            theirs = "—" if mine is None else f"{mine:.0f} ms"
            lines.append(
                f"| {row['tasks']:,} {row['task']} | {config} | {r['tasks_per_s']:,.0f} | "
                f"{r['vs_no_feed']:.2f} | {low:.2f}–{high:.2f} | {p50} | {p99} | "
                f"{r['owner_cpu_ms_per_1k']:.0f} ms | {theirs} |"
            )
    lines.append(
        f"\n{repeats} interleaved rounds; load average {load_before:.1f} before,"
        f" {os.getloadavg()[0]:.1f} after."
    )
    table = "\n".join(lines)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    machine = {"nproc": os.cpu_count(), "python": sys.version.split()[0]}
    mode = "quick" if args.quick else "full"
    machine["load_before"] = load_before
    machine["load_after"] = os.getloadavg()[0]
    result = {"mode": mode, "repeats": repeats, "machine": machine, "results": rows}
    (args.out / "watch.json").write_text(json.dumps(result, indent=2))
    (args.out / "watch.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
