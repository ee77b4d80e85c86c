"""``taskloom list``, ``taskloom next`` and the ``--json`` answers of ``validate``
and ``history``: what a workflow file holds and when it would fire, as text for
people and as one JSON document for scripts (shapes in the README, "JSON").

Every JSON document has ``"version": 1``; a change that removes or renames a key
raises it (new keys may appear without).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from taskloom import plan

if TYPE_CHECKING:
    from taskloom.engine.workflow_model import Problem

JSON_VERSION = 1
EXIT_OK, EXIT_INVALID = 0, 2


def _dump(document: dict) -> None:
    print(json.dumps({"version": JSON_VERSION, **document}, indent=2, ensure_ascii=False))


def _load(path: Path):
    """The workflow, or None after printing why not (one line per problem, stderr)."""
    from taskloom.engine.workflow import WorkflowError, load

    try:
        return load(path)
    except WorkflowError as exc:
        print(exc, file=sys.stderr)
        return None


def _now() -> datetime:
    return datetime.now(UTC)


def main(args) -> int:
    workflow = _load(args.file)
    if workflow is None:
        return EXIT_INVALID
    if args.command == "list":
        return list_tasks(workflow, args.json)
    return next_fires(workflow, args.count, args.json)


# ---------------------------------------------------------------------- list
def list_tasks(workflow, as_json: bool, now: datetime | None = None) -> int:
    now = now or _now()
    records = plan.task_records(workflow, now)
    if as_json:
        _dump(
            {
                "workflow": workflow.name,
                "file": str(workflow.path),
                "workers": workflow.workers,
                "executor": workflow.executor,
                "tasks": records,
            }
        )
        return EXIT_OK
    width = max([len(r["id"]) for r in records] + [4])
    trig = max([len(r["trigger_text"]) for r in records] + [7])
    print(f"{'task':<{width}}  {'trigger':<{trig}}  {'next':<32}  deps")
    for record in records:
        task = workflow.tasks[record["id"]]
        times = plan.fire_times(task, now, 1)
        when = plan.local(times[0]) if times else "-"
        if times and record["trigger"] in plan.RELATIVE:
            when += " *"
        deps = ", ".join(record["deps"]) or "-"
        print(f"{record['id']:<{width}}  {record['trigger_text']:<{trig}}  {when:<32}  {deps}")
    if any(r["trigger"] in plan.RELATIVE for r in records):
        print("* counted from the start of a run started now")
    return EXIT_OK


# ---------------------------------------------------------------------- next
def next_fires(workflow, count: int, as_json: bool, now: datetime | None = None) -> int:
    now = now or _now()
    fires = plan.next_fires(workflow, now, count)
    if as_json:
        _dump(
            {
                "workflow": workflow.name,
                "file": str(workflow.path),
                "now": plan.iso(now),
                "fires": [
                    {
                        "at": plan.iso(fire.at),
                        "task": fire.task,
                        "trigger": fire.trigger,
                        "relative": fire.relative,
                        "skipped": fire.skipped,
                    }
                    for fire in fires
                ],
            }
        )
        return EXIT_OK
    if not fires:
        print(f"{workflow.name} has no timed task: every task runs when its dependencies allow")
        return EXIT_OK
    width = max(len(fire.task) for fire in fires)
    for fire in fires:
        mark = "  *" if fire.relative else ""
        mark += "  skipped (calendar)" if fire.skipped else ""
        print(f"{plan.local(fire.at)}  {fire.task:<{width}}  {fire.trigger}{mark}")
    if any(fire.relative for fire in fires):
        print("* counted from the start of a run started now")
    return EXIT_OK


# ---------------------------------------------------------------------- validate, history
def located(path: Path, problems) -> list[tuple[Problem, str]]:
    """(problem, its line of text) for each problem, each with a line and column
    (``workflow_text.locate_problems``): "flow.toml:4:1: tasks.a.prioity: unknown key
    (did you mean 'priority'?)"."""
    from taskloom.engine.workflow_text import locate_problems

    try:
        text = Path(path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        text = None
    result = []
    for before, problem in zip(problems, locate_problems(problems, text), strict=True):
        if before.line is None and problem.line is not None:
            where = f"{problem.where}: " if problem.where else ""
            line = f"{problem.file}:{problem.line}:{problem.column}: {where}{problem.message}"
        else:
            line = str(problem)
        result.append((problem, line))
    return result


def validate_json(path: Path, imports: bool = True) -> int:
    """``validate --json``: valid or not, with every problem; exit codes as without.
    ``imports=False`` (``--no-import``): the calls are not imported."""
    from taskloom.engine.workflow import WorkflowError, load
    from taskloom.imports import call_problems

    try:
        workflow = load(path)
        found = call_problems(workflow) if imports else []
        if found:
            raise WorkflowError(found)
    except WorkflowError as exc:
        problems = [
            {
                "file": problem.file,
                "task": problem.task,
                "key": problem.key,
                "line": problem.line,
                "column": problem.column,
                "message": problem.message,
                "text": text,
            }
            for problem, text in (
                [(p, str(p)) for p in exc.problems]
                if exc.unreadable
                else located(path, exc.problems)
            )
        ]
        _dump(
            {
                "file": str(path),
                "valid": False,
                "unreadable": exc.unreadable,
                "tasks": None,
                "problems": problems,
            }
        )
        return EXIT_INVALID
    _dump(
        {
            "file": str(path),
            "valid": True,
            "unreadable": False,
            "tasks": len(workflow.tasks),
            "problems": [],
        }
    )
    return EXIT_OK


def history_json(workflow, db_path: Path, rows: list[dict], labels=None) -> None:
    """``history --json``: attempts oldest first, times in local ISO 8601; ``labels``
    ({run: label}) name the runs that are not the workflow's own (a backfill)."""
    labels = labels or {}

    def when(seconds):
        return None if seconds is None else plan.iso(datetime.fromtimestamp(seconds, UTC))

    _dump(
        {
            "workflow": workflow.name,
            "store": str(db_path),
            "attempts": [
                {
                    "run": row["run"],
                    "run_label": labels.get(row["run"]),
                    "task": row["task_id"],
                    "number": row["number"],
                    "started": when(row["started"]),
                    "ended": when(row["ended"]),
                    "outcome": row["outcome"],
                    "error": row["error"],
                    "exit_code": row["exit_code"],
                    "log_path": row["log_path"],
                }
                for row in reversed(rows)
            ],
        }
    )
