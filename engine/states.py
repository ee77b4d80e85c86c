"""Task states and the one table of legal transitions between them."""

from __future__ import annotations

from enum import Enum


class TaskState(Enum):
    """A task's state; ``settled`` tells the final ones (SUCCEEDED, FAILED, SKIPPED,
    CANCELLED). The legal transitions are in ``TRANSITIONS`` below."""

    PENDING = "pending"  # waiting for dependencies
    SCHEDULED = "scheduled"  # on the timer heap, not yet due
    READY = "ready"  # due, waiting for a free worker
    RUNNING = "running"
    RETRY_WAIT = "retry_wait"  # failed, waiting out its backoff
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"  # an upstream failed, was skipped or cancelled
    CANCELLED = "cancelled"

    # Set on each member below (not members themselves: annotations only).
    bit: int  # this state's bit in ``allowed`` masks
    settled: bool  # a final state (SETTLED)
    allowed: int  # bits of the states it may change to (TRANSITIONS)
    kind: str  # the event kind: ``value`` as a plain attribute (``.value`` is a property)

    def __repr__(self) -> str:
        return f"TaskState.{self.name}"


S = TaskState
SETTLED = frozenset({S.SUCCEEDED, S.FAILED, S.SKIPPED, S.CANCELLED})
NOT_STARTED = frozenset({S.PENDING, S.SCHEDULED, S.READY})

# Settled states may leave again: a manual retry re-arms a task (-> PENDING or
# READY), a recurring task goes back on the timer heap after each run, and a task
# downstream of a recurring one runs again after each new upstream success.
TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    S.PENDING: frozenset({S.SCHEDULED, S.READY, S.SKIPPED, S.CANCELLED}),
    S.SCHEDULED: frozenset({S.READY, S.PENDING, S.SKIPPED, S.CANCELLED}),
    S.READY: frozenset({S.RUNNING, S.PENDING, S.SCHEDULED, S.SKIPPED, S.CANCELLED}),
    # RUNNING -> READY: an attempt interrupted by shutdown(cancel_running=True).
    S.RUNNING: frozenset({S.SUCCEEDED, S.FAILED, S.RETRY_WAIT, S.CANCELLED, S.READY}),
    S.RETRY_WAIT: frozenset({S.READY, S.RUNNING, S.CANCELLED}),
    S.SUCCEEDED: frozenset({S.PENDING, S.SCHEDULED, S.READY, S.RUNNING}),
    S.FAILED: frozenset({S.PENDING, S.SCHEDULED, S.READY, S.RUNNING, S.SKIPPED}),
    S.SKIPPED: frozenset({S.PENDING, S.READY, S.SCHEDULED}),
    S.CANCELLED: frozenset({S.PENDING, S.READY, S.SCHEDULED}),
}


# Plain attributes on each member: the engine asks these on every state change,
# and an Enum member's hash is computed in Python.
for _i, _state in enumerate(TaskState):
    _state.bit = 1 << _i
    _state.settled = _state in SETTLED
    _state.kind = _state.value
for _state, _targets in TRANSITIONS.items():
    _state.allowed = sum(t.bit for t in _targets)


class IllegalTransition(RuntimeError):
    """An engine bug: a state change the table does not allow."""


def check_transition(task_id: str, old: TaskState, new: TaskState) -> None:
    """The one place every state change is checked."""
    if not old.allowed & new.bit:
        raise IllegalTransition(f"task {task_id!r}: {old.name} -> {new.name} is not allowed")
