"""How fast the forecast is: one pass of the real engine on a virtual clock.

    python -m benchmarks.forecast_bench            # 2,000 and 20,000 tasks, medians of 3
    python -m benchmarks.forecast_bench --quick    # 200 tasks, 1 run (the smoke test)

Workloads (fixed seed): a random DAG of N tasks, each with up to 3 dependencies on
the 50 tasks before it, 8 workers, every task with 20 past durations (1-120 s);
plus the same DAG beside 10 interval and 5 cron tasks over a 24 h horizon. For
each: the point-estimate pass, one sampled pass, copying a live scheduler of N
tasks (``Plan.from_scheduler``), and how many sampled passes fit in the 2 s a
refresh may take. Writes ``results/forecast.json`` and ``results/forecast.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskDefinition
from taskloom.engine.durations_model import DurationModel
from taskloom.engine.forecast import Plan, PlannedTask, forecast, simulate

RESULTS = Path(__file__).parent / "results"
WALL = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
REFRESH = 2.0  # seconds a live refresh may take (the bound)


def dag(n: int, seed: int = 1) -> list[TaskDefinition]:
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        window = range(max(0, i - 50), i)
        deps = tuple(f"t{j}" for j in rng.sample(window, min(len(window), rng.randint(0, 3))))
        tasks.append(TaskDefinition(f"t{i}", print, deps=deps))
    return tasks


def recurring() -> list[TaskDefinition]:
    every = [TaskDefinition(f"every{i}", print, every=300.0 * (i + 1)) for i in range(10)]
    cron = [
        TaskDefinition(f"cron{i}", print, cron=f"{7 * i} */{i + 1} * * *", timezone="Europe/Berlin")
        for i in range(5)
    ]
    return every + cron


def history(tasks: list[TaskDefinition], seed: int = 2) -> DurationModel:
    rng = random.Random(seed)
    return DurationModel({t.id: [rng.uniform(1, 120) for _ in range(20)] for t in tasks})


def median_time(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        began = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def live_copy_seconds(tasks: list[TaskDefinition], runs: int) -> float:
    live = Scheduler(8, clock=ManualClock(0.0, WALL), executor=SyncExecutor())
    for t in tasks:
        t.submit(live)  # not started: every task is as a fresh run has it
    seconds, _ = median_time(lambda: Plan.from_scheduler(live), runs)
    live.shutdown()
    return seconds


def measure(name: str, tasks: list[TaskDefinition], horizon, runs: int) -> dict:
    plan = Plan([PlannedTask(t) for t in tasks], 8, WALL)
    model = history(tasks)
    point_s, point = median_time(lambda: simulate(plan, model, horizon=horizon), runs)
    sampled_s, _ = median_time(
        lambda: simulate(plan, model, rng=random.Random(3), horizon=horizon), runs
    )
    began = time.perf_counter()
    within = forecast(plan, model, horizon=horizon, passes=10_000, budget=REFRESH)
    refresh_s = time.perf_counter() - began
    return {
        "workload": name,
        "tasks": len(tasks),
        "simulated_runs": sum(1 for r in point.runs if not r.replay),
        "point_pass_s": round(point_s, 4),
        "sampled_pass_s": round(sampled_s, 4),
        "live_copy_s": round(live_copy_seconds(tasks, runs), 4),
        "passes_in_2s": within.passes,
        "refresh_s": round(refresh_s, 3),
        "us_per_run": round(1e6 * point_s / max(1, len(point.runs)), 1),
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| workload | tasks | runs simulated | point pass (s) | sampled pass (s) | "
        "copy of a live scheduler (s) | µs per run | sampled passes in 2 s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['tasks']:,} | {r['simulated_runs']:,} | "
            f"{r['point_pass_s']:.3f} | {r['sampled_pass_s']:.3f} | {r['live_copy_s']:.3f} | "
            f"{r['us_per_run']} | {r['passes_in_2s']} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 tasks, one run")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where results go")
    args = parser.parse_args(argv)
    sizes, runs = ((200,), 1) if args.quick else ((2_000, 20_000), 3)
    rows = []
    for n in sizes:
        tasks = dag(n)
        rows.append(measure(f"DAG of {n:,}", tasks, None, runs))
        rows.append(measure(f"DAG of {n:,} + 15 recurring, 24 h", tasks + recurring(), 86400, runs))
        print(table(rows), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "machine": platform.machine()}
    (args.out / "forecast.json").write_text(
        json.dumps({"machine": machine, "rows": rows}, indent=2)
    )
    (args.out / "forecast.md").write_text(table(rows) + "\n")


if __name__ == "__main__":
    main()
