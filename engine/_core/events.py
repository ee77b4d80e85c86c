"""Making events: one ``seq`` for the whole engine, each event journaled and queued.

Events are made under the core lock, so the outbox is in ``seq`` order; the
delivery thread (or the calling thread, with ``SyncExecutor``) hands them to
listeners after the lock is released (see ``delivery.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._store.journal import Journal
from ..clock import Clock
from ..models import Event
from ..options import Outcome
from .delivery import EventDelivery
from .task import Task

_new_tuple: Callable[..., Any] = tuple.__new__  # a NamedTuple from all its fields, no frame


class Events:
    """Numbers, journals and queues events. Not thread-safe: every method is called
    with the core lock held (``seq`` and ``ending`` are guarded by it)."""

    def __init__(self, clock: Clock, delivery: EventDelivery, journal: Journal | None) -> None:
        self._clock = clock
        self._delivery = delivery
        self._journal = journal
        self.seq = 0  # the last event's number; recovery goes on from the store's
        # An attempt's outcome rides on the first event its end emits (``Event.outcome``).
        # Set by the lifecycle when it records the attempt and cleared once the end is
        # handled, so an end that emits nothing (a cancelled or interrupted run while
        # another still runs) never lends its outcome to a later event.
        self.ending: tuple[Task, Outcome] | None = None

    @property
    def listened(self) -> bool:
        """Whether anyone listens (events are queued for delivery)."""
        return self._delivery.has_listeners

    def continue_after(self, seq: int) -> None:
        """Recovery: the store holds events up to ``seq``; number on from there."""
        self.seq = seq

    def emit(self, task: Task, kind: str, error: str | None = None) -> None:
        seq = self.seq = self.seq + 1
        outcome = None
        ending = self.ending
        if ending is not None and ending[0] is task:
            outcome = ending[1]
            self.ending = None
        if self._journal is not None:
            self._journal.persist_state(seq, task, kind, error)
        delivery = self._delivery
        if delivery.has_listeners:
            delivery.last_queued = seq
            # tuple.__new__ fills every field, as Event(...) would, without its
            # Python-level __new__ (this runs three times per task run).
            delivery.outbox.append(
                _new_tuple(
                    Event,
                    (
                        seq,
                        kind,
                        task.id,
                        task.state,
                        self._clock.now(),
                        task.attempt,
                        task.run_at,
                        error,
                        outcome,
                    ),
                )
            )

    def emit_engine(self, kind: str) -> None:
        """An event about the whole engine (pause/resume all): task_id "" and no state."""
        self.seq += 1
        delivery = self._delivery
        if delivery.has_listeners:
            delivery.last_queued = self.seq
            delivery.outbox.append(
                Event(self.seq, kind, "", None, self._clock.now(), 0, None, None)
            )
