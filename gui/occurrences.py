"""Later occurrences of recurring tasks, for the timeline.

The engine's upcoming list holds one entry per recurring task (its next
occurrence); the timeline shows the following ones too, within ``horizon``
seconds, computed from the task's definition (interval or cron).
"""

from __future__ import annotations

from datetime import UTC, datetime

from taskloom.engine import Entry

from .run_history import wall_offset

HORIZON = 600.0  # the timeline's widest window looks 10 minutes ahead
PER_TASK = 30  # a 1-second interval would otherwise add 600 markers per task


def later_occurrences(scheduler, entries, horizon: float = HORIZON) -> list[Entry]:
    """Each recurring entry's following occurrences up to ``horizon`` seconds after it
    (at most PER_TASK each), and those its calendar leaves out as kind "skipped".
    Tasks gone meanwhile add nothing."""
    result = []
    offset = None
    for entry in entries:
        if entry.kind != "recurring":
            continue
        try:
            definition = scheduler.definition(entry.task_id)
        except (KeyError, RuntimeError):
            continue
        end = entry.run_at + horizon
        skipped: list[float] = []
        if definition.every is not None:
            times = [entry.run_at + k * definition.every for k in range(1, PER_TASK + 1)]
            days = definition.skip_days()
            if days is not None:  # the cadence goes on past skipped days (recurrence.py)
                if offset is None:
                    offset = wall_offset(scheduler.clock)
                # and those skipped between now and this one (it came after them)
                now = scheduler.clock.now()
                before = [entry.run_at - k * definition.every for k in range(PER_TASK, 0, -1)]
                times = [t for t in before if t > now] + times
                on = {t: days.skips(datetime.fromtimestamp(t + offset, UTC)) for t in times}
                skipped = [t for t in times if on[t]]
                times = [t for t in times if not on[t] and t > entry.run_at]
        elif definition.cron is not None:
            if offset is None:
                offset = wall_offset(scheduler.clock)
            recurrence = definition.recurrence()
            wall = datetime.fromtimestamp(entry.run_at + offset, UTC)
            times = []
            # skipped ones from now on: also those before this one (it came after them)
            start = min(wall, datetime.fromtimestamp(scheduler.clock.now() + offset, UTC))
            while len(times) < PER_TASK:
                wall = recurrence.next_after(wall)
                times.append(wall.timestamp() - offset)
                if times[-1] > end:
                    break
            if recurrence.skip is not None:
                last = datetime.fromtimestamp(min(end, times[-1]) + offset, UTC)
                skipped = [w.timestamp() - offset for w in recurrence.skipped_between(start, last)]
        else:
            continue
        result += [
            Entry(at, entry.priority, entry.task_id, "recurring") for at in times if at <= end
        ]
        result += [Entry(at, entry.priority, entry.task_id, "skipped") for at in skipped[:PER_TASK]]
    return result
