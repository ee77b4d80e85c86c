"""What the SQLite store costs the engine: throughput with and without it, side by side.

    python -m benchmarks.store_bench [--quick] [--before DIR] [--profile]

Three workloads on 4 workers: no-op tasks (the worst case: the store's work per
task is all there is), tasks that sleep 5 ms (a short real job), both as a
``Call`` (a store needs tasks it can run again after a restart), and ``true``
commands (a real process per attempt). Every attempt start is durable before its
code runs (commands) or noted in the in-flight file (calls), and every success
before it is reported, with group commit. With a store, the run also holds the
store's owner lock.

Each measurement runs in a fresh process. ``--before DIR`` takes a checkout of an
earlier commit with its own ``.venv`` (see benchmarks/README.md): its engine runs
the same workloads in the same benchmark run, interleaved with this one, so the
before/after ratio is measured under the same load. Besides tasks a second, each
run reports the process's CPU per task and, with a store, the SQLite rows each
task cost (statements traced on the store's connection; an ``executemany`` counts
one per row).

``--profile`` runs 20,000 no-op calls once with and once without a store under
cProfile on every thread and prints the Python calls per task and the top
functions by own time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"

# One measurement, run by this checkout's python or the --before one's, with the
# checkout as working folder: only public API, and the store's connection for tracing.
MEASURE = r"""
import json, sys, tempfile, time
from pathlib import Path
from taskloom.engine import Call, Scheduler
from taskloom.engine.store import SQLiteStore

task, count, with_store = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "store"
statements = {}

def traced(sql):
    words = sql.split(None, 3)
    verb = words[0].upper()
    if verb in ("INSERT", "UPDATE", "DELETE"):
        table = words[2] if verb != "UPDATE" else words[1]
        if verb == "INSERT" and table.upper() in ("OR", "INTO"):
            table = sql.split(" INTO ", 1)[1].split(None, 1)[0]
        statements[table] = statements.get(table, 0) + 1

if task == "true_command":
    from taskloom.engine.command import Command
    fn = Command(["true"])
else:
    fn = Call(f"benchmarks.store_bench:{task}")
with tempfile.TemporaryDirectory() as tmp:
    store = SQLiteStore(Path(tmp) / "bench.db") if with_store else None
    scheduler = Scheduler(workers=4, store=store, log_dir=tmp)
    for _ in range(count):
        scheduler.add(fn)
    if store is not None:
        store.flush()  # the task rows: written before the clock starts
        store._conn.set_trace_callback(traced)
    cpu = time.process_time()
    started = time.perf_counter()
    scheduler.start()
    scheduler.wait()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    scheduler.shutdown()
    if store is not None:
        store.flush()
        store._conn.set_trace_callback(None)
        store.close()
print(json.dumps({
    "rate": count / elapsed,
    "cpu_us": cpu / count * 1e6,
    "rows": {table: n / count for table, n in sorted(statements.items())},
}))
"""


def noop() -> None:
    pass


def sleep_5ms() -> None:
    time.sleep(0.005)


def measure(tree: Path, task: str, count: int, with_store: bool) -> dict:
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        python = Path(sys.executable)
    args = [str(python), "-c", MEASURE, task, str(count), "store" if with_store else "none"]
    done = subprocess.run(args, cwd=tree, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {task}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def compare(trees: dict[str, Path], sizes: dict[str, int], repeats: int) -> dict:
    """Every (tree, workload, store or not), ``repeats`` times, interleaved."""
    runs: dict[tuple[str, str, bool], list[dict]] = {}
    for _ in range(repeats):
        for task, count in sizes.items():
            for name, tree in trees.items():
                for with_store in (False, True):
                    runs.setdefault((name, task, with_store), []).append(
                        measure(tree, task, count, with_store)
                    )
    rows: dict = {}
    for (name, task, with_store), found in runs.items():
        entry = rows.setdefault(task, {}).setdefault(name, {"tasks": sizes[task]})
        side = "with_store" if with_store else "without_store"
        entry[side] = _median(found, "rate")
        entry[f"{side}_range"] = [min(r["rate"] for r in found), max(r["rate"] for r in found)]
        if with_store:
            without = runs[(name, task, False)]
            ratios = [w["rate"] / wo["rate"] for w, wo in zip(found, without, strict=True)]
            entry["ratio_range"] = [min(ratios), max(ratios)]
        entry[f"{side}_cpu_us"] = _median(found, "cpu_us")
        if with_store:
            tables = sorted({t for run in found for t in run["rows"]})
            entry["rows_per_task"] = {
                t: statistics.median(run["rows"].get(t, 0.0) for run in found) for t in tables
            }
    for by_tree in rows.values():
        for entry in by_tree.values():
            entry["ratio"] = entry["with_store"] / entry["without_store"]
    return rows


def table(rows: dict) -> str:
    lines = [
        "| workload (4 workers) | engine | without store (tasks/s) | with store (tasks/s) "
        "| with / without (min–max of the rounds) | CPU µs/task without / with "
        "| rows a task (tasks, attempts, events) |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for task, by_tree in rows.items():
        for name, row in by_tree.items():
            per = row.get("rows_per_task", {})
            counts = ", ".join(f"{per.get(t, 0.0):.2f}" for t in ("tasks", "attempts", "events"))
            low, high = row.get("ratio_range", (row["ratio"], row["ratio"]))
            lines.append(
                f"| {task} ({row['tasks']:,}) | {name} | {row['without_store']:,.0f} | "
                f"{row['with_store']:,.0f} | {row['ratio']:.0%} ({low:.0%}–{high:.0%}) | "
                f"{row['without_store_cpu_us']:.0f} / {row['with_store_cpu_us']:.0f} | {counts} |"
            )
    return "\n".join(lines)


def profile(count: int = 20_000, top: int = 15) -> None:
    """cProfile on every thread of one run with and one without a store."""
    import cProfile
    import pstats
    import tempfile
    import threading

    from taskloom.engine import Call, Scheduler
    from taskloom.engine.store import SQLiteStore

    for with_store in (False, True):
        profiles: list[cProfile.Profile] = []
        original = threading.Thread.run

        def run(self, original=original, profiles=profiles):
            profiler = cProfile.Profile()
            profiles.append(profiler)
            profiler.enable()
            try:
                original(self)
            finally:
                profiler.disable()

        threading.Thread.run = run  # type: ignore[method-assign]
        try:
            with tempfile.TemporaryDirectory() as tmp:
                store = SQLiteStore(Path(tmp) / "bench.db") if with_store else None
                scheduler = Scheduler(workers=4, store=store, log_dir=tmp)
                for _ in range(count):
                    scheduler.add(Call("benchmarks.store_bench:noop"))
                if store is not None:
                    store.flush()
                main = cProfile.Profile()
                profiles.append(main)
                main.enable()
                scheduler.start()
                scheduler.wait()
                main.disable()
                scheduler.shutdown()
                if store is not None:
                    store.close()
        finally:
            threading.Thread.run = original  # type: ignore[method-assign]
        stats = pstats.Stats(profiles[0])
        for profiler in profiles[1:]:
            stats.add(profiler)
        label = "with a store" if with_store else "without a store"
        print(f"\n## {count:,} no-op calls {label}: {stats.total_calls / count:.0f} calls a task")
        stats.sort_stats("tottime").print_stats(top)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small run of each")
    parser.add_argument("--before", type=Path, help="an earlier checkout with its own .venv")
    parser.add_argument("--profile", action="store_true", help="cProfile 20,000 no-op calls")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.profile:
        profile()
        return 0
    repeats = 1 if args.quick else args.repeats
    sizes = {
        "noop": 500 if args.quick else 20_000,
        "sleep_5ms": 100 if args.quick else 2_000,
        "true_command": 50 if args.quick else 600,
    }
    trees = {"this": ROOT}
    if args.before is not None:
        trees["before"] = args.before.resolve()
    rows = compare(trees, sizes, repeats)
    text = table(rows)
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "store.json").write_text(json.dumps(rows, indent=2))
        (RESULTS / "store.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
