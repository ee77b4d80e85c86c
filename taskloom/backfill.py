"""``taskloom backfill FILE --from 2026-11-01 --to 2026-11-07 [--task T] [--dry-run]``:
run the occurrences a stretch of days would have had, now, as one run.

Each recurring task (or each one named with ``--task``) gives its cron or interval
occurrences on the days ``--from`` to ``--to`` (both in, each day read in the task's
zone; an interval counts from midnight of the first day); the days its calendar
leaves out give none. Every occurrence becomes a one-shot task ``NAME@TIME`` due
at that time, which is past: it runs at once and its command is told that time as
``TASKLOOM_SCHEDULED_AT``, as the occurrence itself would have been. The engine
starts due work earliest first, ``workers`` at a time (and within its pools), so
the occurrences run in order. ``occurrences`` and ``backfill_workflow`` are pure:
tests pass the days.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta

MAX_OCCURRENCES = 10_000  # a range that would make more is refused (a typo, or --task)


class BackfillError(ValueError):
    """A backfill that cannot be made: the message says why, for one line on stderr."""


def parse_day(text: str) -> date:
    """A ``--from``/``--to`` value: ``YYYY-MM-DD``."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise BackfillError(f"{text!r} is not a date like 2026-11-01") from None


def occurrences(task, first: date, last: date) -> list[datetime]:
    """The task's occurrences on the days ``first`` to ``last`` (aware, UTC), in order."""
    from taskloom.engine.cron import zone

    tz = zone(task.timezone or "UTC")
    begin = datetime.combine(first, time(), tz).astimezone(UTC)
    stop = datetime.combine(last + timedelta(days=1), time(), tz).astimezone(UTC)
    found: list[datetime] = []
    if task.cron is not None:
        recurrence = task.recurrence()  # skips the calendar's days itself
        when = recurrence.next_after(begin - timedelta(microseconds=1))
        while when < stop:
            found.append(when)
            if len(found) > MAX_OCCURRENCES:
                break
            when = recurrence.next_after(when)
    elif task.every is not None:
        days = task.skip_days()
        when = begin
        while when < stop and len(found) <= MAX_OCCURRENCES:
            if days is None or not days.skips(when):
                found.append(when)
            when += timedelta(seconds=task.every)
    return found


def label(first: date, last: date, names=()) -> str:
    """What the backfill's run is called in its store, ``history``, ``status`` and the
    window: the same command gives the same label, which is what resumes it."""
    text = f"backfill {first} to {last}"
    return text + (f" of {', '.join(names)}" if names else "")


def backfill_workflow(workflow, first: date, last: date, names=()):
    """A workflow of one one-shot task per occurrence (``NAME@TIME``), earliest first;
    ``BackfillError`` when there is nothing to backfill or too much."""
    if last < first:
        raise BackfillError(f"--to {last} is before --from {first}")
    chosen = list(names) or [tid for tid, task in workflow.tasks.items() if task.recurring]
    for tid in chosen:
        if tid not in workflow.tasks:
            known = ", ".join(workflow.tasks)
            raise BackfillError(f"{workflow.path}: no task {tid!r} (it has: {known})")
        if not workflow.tasks[tid].recurring:
            raise BackfillError(f"{tid} has no cron or every: it has no occurrences to backfill")
    if not chosen:
        raise BackfillError(f"{workflow.path}: no task with cron or every to backfill")
    made = []
    for tid in chosen:
        task = workflow.tasks[tid]
        for when in occurrences(task, first, last):
            made.append((when, tid))
    if len(made) > MAX_OCCURRENCES:
        raise BackfillError(
            f"more than {MAX_OCCURRENCES:,} occurrences from {first} to {last}: "
            "give a shorter range or --task"
        )
    made.sort(key=lambda item: (item[0], chosen.index(item[1])))
    tasks = {}
    for when, tid in made:
        task = workflow.tasks[tid]
        zone_name = task.timezone or "UTC"
        from taskloom.engine.cron import zone

        label = when.astimezone(zone(zone_name)).isoformat(timespec="seconds")
        new_id = f"{tid}@{label}"
        tasks[new_id] = replace(
            task,
            id=new_id,
            at=when,
            every=None,
            cron=None,
            timezone=None,
            deps=(),
            skip=(),
            jitter=None,  # a backfill runs now: no spreading out (its pool still holds)
            group=tid,  # the window collapses a task's occurrences into one group
        )
    hooks = workflow.hooks
    own = {new: hooks.task_commands.get(new.partition("@")[0]) for new in tasks}
    secrets = {new: workflow.task_secrets.get(new.partition("@")[0]) for new in tasks}
    backfill = replace(
        workflow,
        tasks=tasks,
        positions={},
        hooks=replace(hooks, task_commands={k: v for k, v in own.items() if v}),
        task_secrets={k: v for k, v in secrets.items() if v},
    )
    backfill.path = workflow.path
    return backfill


def describe(backfill) -> list[str]:
    """``--dry-run``: one numbered line per occurrence, in the order they run."""
    from taskloom import plan

    lines = []
    width = max((len(tid.partition("@")[0]) for tid in backfill.tasks), default=4)
    for number, (tid, task) in enumerate(backfill.tasks.items(), 1):
        name = tid.partition("@")[0]
        lines.append(f"{number:>4}. {name:<{width}}  {plan.local(task.at)}")
    return lines
