"""The engine's option values, one enum each: the single list of what is valid.

``StrEnum``: a member is its string ("fixed_rate" == Mode.FIXED_RATE), so callers
may pass either, and values stored or shown as text (the store, workflow files,
JSON, f-strings) read the same as before. The engine turns an accepted string
into its member at its argument checks.
"""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """How an interval task's next occurrence is counted."""

    FIXED_RATE = "fixed_rate"  # from the previous due time: the cadence holds
    FIXED_DELAY = "fixed_delay"  # from the end of the previous run


class Overlap(StrEnum):
    """What a recurring task does when it comes due while a run of it is in flight."""

    SKIP = "skip"
    QUEUE = "queue"
    PARALLEL = "parallel"


class Misfire(StrEnum):
    """What a recurring task does with occurrences missed (a stall, a restart)."""

    RUN_ONCE = "run_once"
    SKIP = "skip"
    RUN_ALL = "run_all"


class TriggerRule(StrEnum):
    """When a task with dependencies may run."""

    ALL_SUCCESS = "all_success"
    ALL_DONE = "all_done"
    ONE_FAILED = "one_failed"


class Outcome(StrEnum):
    """How an attempt ended (``RUNNING`` while it has not)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # a timeout too
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # stopped by shutdown: the task runs again later
    LOST = "lost"  # its owner died mid-attempt (see _core/recovery.py)


def values(enum: type[StrEnum]) -> tuple[str, ...]:
    """The valid strings of ``enum``, in declaration order (for messages and lists)."""
    return tuple(member.value for member in enum)
