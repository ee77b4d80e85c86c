"""What a workflow file would do, without running it: its tasks, when they would
fire, in what order they would run. Used by ``taskloom list``, ``next`` and
``run --dry-run``; pure functions of the file and a time, so tests pass the time.

Fire times are those of a run started at ``now``: ``at`` and ``cron`` are
absolute (an ``at`` already past fires at once); ``after`` and ``every`` count
from the start (``relative`` in the answers). A task without a time runs when its
dependencies allow, so it has no fire time of its own.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from datetime import datetime, timedelta

TRIGGER_TEXT = {"deps": "when its dependencies allow", "none": "at once"}


@dataclasses.dataclass(frozen=True)
class Fire:
    at: datetime  # aware
    task: str
    trigger: str  # at, after, every, cron
    relative: bool  # counted from the run's start (after, every)
    skipped: bool = False  # on a day its skip list or calendar leaves out: it does not run


def fire_times(task, now: datetime, n: int):
    """The first ``n`` fire times of one task's own schedule (aware datetimes), for a
    run started at ``now``. Empty for a task without one."""
    kept = (when for when, skipped in _fires(task, now) if not skipped)
    return list(itertools.islice(kept, n))


def _fires(task, now: datetime):
    """One task's fire times with whether each is skipped (its calendar), lazily."""
    days = task.skip_days()
    for when in _times(task, now):
        yield when, days is not None and days.skips(when)


def _times(task, now: datetime):
    """One task's fire times, lazily (an interval or cron schedule never ends)."""
    from taskloom.engine.cron import CronTrigger

    kind = task.schedule_kind
    if kind == "at":
        yield max(task.at, now)
    elif kind == "after":
        yield now + timedelta(seconds=task.after)
    elif kind == "every":
        for k in itertools.count(1):
            yield now + timedelta(seconds=task.every * k)
    elif kind == "cron":
        trigger, when = CronTrigger(task.cron, task.timezone or "UTC"), now
        while True:
            when = trigger.next_after(when)
            yield when


def next_fires(workflow, now: datetime, n: int) -> list[Fire]:
    """The next ``n`` fire times across every task, earliest first (ties in file order),
    skipped ones (``Fire.skipped``: a day its calendar leaves out) among them.
    Each task's times are drawn lazily: n of them across 3,000 tasks, not n per task."""

    def tagged(index: int, tid: str, task):
        relative = task.schedule_kind in RELATIVE
        for when, skipped in _fires(task, now):
            yield when, index, Fire(when, tid, task.schedule_kind, relative, skipped)

    merged = heapq.merge(
        *(tagged(index, tid, task) for index, (tid, task) in enumerate(workflow.tasks.items())),
        key=lambda item: (item[0], item[1]),
    )
    return [fire for _, _, fire in itertools.islice(merged, n)]


RELATIVE = ("after", "every")


def skipped_fires(workflow, now: datetime, until: datetime) -> list[Fire]:
    """The occurrences from ``now`` to ``until`` that calendars leave out, earliest first
    (for the forecast: what does not run, and why)."""
    found = []
    for tid, task in workflow.tasks.items():
        if not task.skip or not task.recurring:
            continue
        for when, skipped in _fires(task, now):
            if when > until:
                break
            if skipped:
                found.append(Fire(when, tid, task.schedule_kind, task.every is not None, True))
    return sorted(found, key=lambda fire: (fire.at, fire.task))


def trigger_text(task) -> str:
    """How a task is triggered, in words: "cron 0 2 * * * (UTC)", "every 5s", ..."""
    from taskloom.engine.durations import format_duration

    kind = task.schedule_kind
    skips = ", skipping calendar days" if task.skip else ""
    if kind == "cron":
        return f"cron {task.cron} ({task.timezone or 'UTC'}){skips}"
    if kind == "every":
        mode = "" if task.mode == "fixed_rate" else f", {task.mode}"
        return f"every {format_duration(task.every)}{mode}{skips}"
    if kind == "after":
        return f"after {format_duration(task.after)} from the start"
    if kind == "at":
        return f"at {local(task.at)}"
    return "after its dependencies" if task.deps else "at once"


def local(when: datetime) -> str:
    """A time in the local zone, with the zone: 2026-12-01 19:30:00 CET (+0100)."""
    moment = when.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z (%z)")


def iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone().isoformat(timespec="seconds")


def task_records(workflow, now: datetime) -> list[dict]:
    """``list --json``: one record per task, in file order (shape in the README)."""
    records = []
    base = workflow.base_dir
    for tid, task in workflow.tasks.items():
        table = task.to_table(base)
        if "at" in table:
            table["at"] = iso(table["at"])
        if "retry" in table and not isinstance(table["retry"], int):
            table["retry"] = dict(table["retry"])
        times = fire_times(task, now, 1)
        records.append(
            {
                "id": tid,
                "action": "call" if "call" in table else "command",
                "trigger": task.schedule_kind,
                "trigger_text": trigger_text(task),
                "deps": list(task.deps),
                "next": iso(times[0]) if times else None,
                "definition": table,
            }
        )
    return records


def select(workflow, names, with_upstream: bool):
    """A workflow of only the tasks ``names`` (and their upstream tasks, if asked),
    run once and at once: their own schedules are dropped, and dependencies on tasks
    left out are too. ``KeyError`` naming an unknown task."""
    keep: list[str] = []
    stack = list(names)
    for name in names:
        if name not in workflow.tasks:
            raise KeyError(name)
    while stack:
        tid = stack.pop()
        if tid in keep:
            continue
        keep.append(tid)
        if with_upstream:
            stack.extend(workflow.tasks[tid].deps)
    tasks = {}
    for tid in workflow.order():
        if tid in keep:
            task = workflow.tasks[tid]
            deps = tuple(dep for dep in task.deps if dep in keep)
            tasks[tid] = dataclasses.replace(
                task, deps=deps, at=None, after=None, every=None, cron=None
            )
    return dataclasses.replace(
        workflow,
        tasks=tasks,
        positions={tid: xy for tid, xy in workflow.positions.items() if tid in tasks},
    )


def run_order(workflow) -> list[tuple[str, str]]:
    """``run --dry-run``: (task, what starts it), each task after its dependencies,
    otherwise in file order (the order the engine is given them)."""
    return [(tid, trigger_text(workflow.tasks[tid])) for tid in workflow.order()]
