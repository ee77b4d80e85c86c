"""``taskloom forecast FILE``: what a run of the file would do, from now on.

The forecast itself is the engine's (``taskloom.engine.forecast``); this module
reads the durations the workflow's store has seen (read-only, beside a live
run), runs it, and prints it as text or JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from taskloom.engine.durations_model import EXPECTED, GUESS, DurationModel
from taskloom.engine.forecast import Forecast, Plan, forecast

DEFAULT_HORIZON = 86400.0  # --for: a day
RUN_LINES = 60  # runs listed in the text output; JSON lists them all
BUDGET = 1.0  # seconds of sampled passes for the p50/p90


def durations_for(workflow, db_path: Path | None) -> tuple[DurationModel, str]:
    """The model of the workflow's durations, and where they came from (one line)."""
    from taskloom.engine.store import SQLiteStore

    expected = {tid: d.expected for tid, d in workflow.tasks.items()}
    if db_path is None or not db_path.exists():
        return DurationModel(expected=expected), "no runs stored yet"
    store = SQLiteStore.reader(db_path)  # a run may be going on: read beside it
    try:
        return DurationModel.from_store(store, expected), f"durations from {db_path}"
    finally:
        store.close()


def make_forecast(workflow, model: DurationModel, horizon: float, seed: int = 0) -> Forecast:
    return forecast(Plan.from_workflow(workflow), model, horizon=horizon, budget=BUDGET, seed=seed)


def _clock(result: Forecast, seconds: float | None) -> str:
    if seconds is None:
        return "-"
    moment = result.at(seconds).astimezone()
    days = (moment.date() - result.wall.astimezone().date()).days
    text = moment.strftime("%H:%M:%S")
    return text if days == 0 else f"{text} (+{days}d)"


def _span(seconds: float) -> str:
    from taskloom import human

    return human.duration(seconds)  # "20 h 18 min", not "73112.2s"


def skipped(workflow, result: Forecast):
    """The occurrences within the forecast's horizon that a calendar leaves out."""
    from datetime import timedelta

    from taskloom import plan

    until = result.wall + timedelta(seconds=result.horizon or 0)
    return plan.skipped_fires(workflow, result.wall, until)


def render_text(workflow, result: Forecast, model: DurationModel, source: str) -> str:
    kinds = [model.stats(tid).source for tid in workflow.tasks]
    known = (
        f"{kinds.count('history')} from history, {kinds.count(EXPECTED)} expected, "
        f"{kinds.count(GUESS)} guessed"
    )
    lines = [
        f"Forecast of {workflow.name} from {result.wall.astimezone():%Y-%m-%d %H:%M:%S %Z} "
        f"for {_span(result.horizon or 0)}, {result.workers} workers",
        f"durations: {known} ({source})",
    ]
    if result.finish is not None:
        lines.append(
            f"finish: {_clock(result, result.finish)} "
            f"(p50 {_clock(result, result.finish_p50)}, p90 {_clock(result, result.finish_p90)}, "
            f"{result.passes} sampled passes)"
        )
        lines.append("critical path: " + " -> ".join(result.critical_path))
    runs = sorted((r for r in result.runs if not r.replay), key=lambda r: (r.start, r.task_id))
    lines += ["", f"{'start':<20} {'end':<20} {'took':>11}  task"]
    for r in runs[:RUN_LINES]:
        task = workflow.tasks.get(r.task_id)
        jitter = getattr(task, "jitter", None)  # a window: it may start up to this later
        lines.append(
            f"{_clock(result, r.start):<20} {_clock(result, r.end):<20} "
            f"{_span(r.end - r.start):>11}  {r.task_id}"
            + (f" (may start up to {_span(jitter)} later: jitter)" if jitter else "")
        )
    if len(runs) > RUN_LINES:
        lines.append(f"... {len(runs) - RUN_LINES} more runs (--json lists them all)")
    lines.append("")
    if not result.collisions:
        lines.append("collisions: none")
    else:
        lines.append(f"collisions: {len(result.collisions)}")
        for c in result.collisions[:RUN_LINES]:
            lines.append(f"  {_clock(result, c.at):<20} {c.kind:<8} {c.task_id}: {c.detail}")
        if len(result.collisions) > RUN_LINES:
            lines.append(f"  ... {len(result.collisions) - RUN_LINES} more (--json lists them all)")
    left_out = skipped(workflow, result)
    if left_out:
        lines += ["", f"skipped (calendar): {len(left_out)}"]
        for fire in left_out[:RUN_LINES]:
            when = fire.at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
            lines.append(f"  {when:<20} {fire.task}")
    return "\n".join(lines)


def render_json(workflow, result: Forecast, model: DurationModel) -> str:
    # "version" first, as in every --json answer (listing.JSON_VERSION)
    data = {"version": 1, **result.to_json()}
    data["workflow"] = workflow.name
    data["skipped"] = [
        {"task": fire.task, "at": fire.at.isoformat()} for fire in skipped(workflow, result)
    ]
    data["durations"] = {
        tid: {
            "source": (stats := model.stats(tid)).source,
            "median": stats.median,
            "p90": stats.p90,
            "estimate": stats.recent,
            "runs": stats.runs,
        }
        for tid in workflow.tasks
    }
    return json.dumps(data, indent=2)


def show_forecast(args) -> int:
    """The ``forecast`` subcommand: 0 printed, 2 for a file or store that cannot be used."""
    from taskloom.engine.store import StoreError
    from taskloom.engine.workflow import WorkflowError, load

    from .runs import default_db_path

    try:
        workflow = load(args.file)
    except WorkflowError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.workers is not None:
        workflow.workers = args.workers
    try:
        model, source = durations_for(workflow, args.db or default_db_path(workflow))
    except StoreError as exc:
        print(exc, file=sys.stderr)
        return 2
    horizon = DEFAULT_HORIZON if args.horizon is None else args.horizon
    result = make_forecast(workflow, model, horizon, args.seed)
    if args.json:
        print(render_json(workflow, result, model))
    else:
        print(render_text(workflow, result, model, source))
    return 0
