"""The store's task rows, as they were spelled before ``definitions.py``.

A thin shim: ``TaskDefinition.to_row``/``from_row`` are the conversions now, and
the engine calls them directly. These names stay for code not moved yet.
"""

from __future__ import annotations

from .definitions import TaskDefinition, action_from_row, action_row, defined_by_call
from .models import RetryPolicy

action_spec = action_row
action_from_spec = action_from_row


def task_spec(fn, *, deps, priority, retry, timeout, trigger_rule, recurrence, options) -> dict:
    return defined_by_call(
        "", fn, None, None, deps, priority, retry, timeout, trigger_rule, recurrence, options
    ).to_row()


def recurrence_from_spec(spec: dict):
    return TaskDefinition.from_row("", spec).recurrence()


def retry_from_spec(spec: dict) -> RetryPolicy | None:
    return TaskDefinition.from_row("", spec).retry
