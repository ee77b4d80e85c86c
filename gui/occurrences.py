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
    (at most PER_TASK each). Tasks gone meanwhile add nothing."""
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
        if definition.every is not None:
            times = [entry.run_at + k * definition.every for k in range(1, PER_TASK + 1)]
        elif definition.cron is not None:
            if offset is None:
                offset = wall_offset(scheduler.clock)
            recurrence = definition.recurrence()
            wall = datetime.fromtimestamp(entry.run_at + offset, UTC)
            times = []
            while len(times) < PER_TASK:
                wall = recurrence.next_after(wall)
                times.append(wall.timestamp() - offset)
                if times[-1] > end:
                    break
        else:
            continue
        result += [
            Entry(at, entry.priority, entry.task_id, "recurring") for at in times if at <= end
        ]
    return result
