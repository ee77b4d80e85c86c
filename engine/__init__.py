"""Taskloom's engine: a threaded scheduler library, pure Python, no Qt.

The names below load on first use (PEP 562): ``taskloom list FILE`` reads a file
without importing the scheduler, its store or networkx (docs/architecture.md, 1.1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from taskloom import __version__ as __version__  # one version source: taskloom/__init__.py

if TYPE_CHECKING:
    from ._core.scheduler import EVENT_KINDS, TRIGGER_RULES, Scheduler
    from ._jobs.context import RemoteResult, RunContext, current_run
    from .actions import Call
    from .clock import ManualClock, SystemClock
    from .definitions import TaskDefinition
    from .errors import (
        CycleError,
        InvalidArgument,
        StoreError,  # raised by a Scheduler whose store failed, and by reads
        TaskCancelled,
        TaskTimeout,
    )
    from .executors import SyncExecutor
    from .models import Action, Attempt, Entry, Event, RetryPolicy, TaskInfo
    from .options import Misfire, Mode, Outcome, Overlap, TriggerRule
    from .run_api import Refused, RunInterface
    from .states import TaskState

# name -> the module (relative to this package) that defines it
_EXPORTS = {
    "EVENT_KINDS": "._core.scheduler",
    "TRIGGER_RULES": "._core.scheduler",
    "Scheduler": "._core.scheduler",
    "RemoteResult": "._jobs.context",
    "RunContext": "._jobs.context",
    "current_run": "._jobs.context",
    "Call": ".actions",
    "ManualClock": ".clock",
    "SystemClock": ".clock",
    "TaskDefinition": ".definitions",
    "CycleError": ".errors",
    "InvalidArgument": ".errors",
    "TaskCancelled": ".errors",
    "TaskTimeout": ".errors",
    "SyncExecutor": ".executors",
    "Action": ".models",
    "Attempt": ".models",
    "Entry": ".models",
    "Event": ".models",
    "RetryPolicy": ".models",
    "TaskInfo": ".models",
    "Misfire": ".options",
    "Mode": ".options",
    "Outcome": ".options",
    "Overlap": ".options",
    "TriggerRule": ".options",
    "Refused": ".run_api",
    "RunInterface": ".run_api",
    "TaskState": ".states",
    "StoreError": ".errors",
}


def __getattr__(name: str) -> object:
    """Load an exported name's module on first use, then keep the name here. A
    submodule (``taskloom.engine.store``) loads on first use too, as an attribute."""
    from importlib import import_module

    module = _EXPORTS.get(name)
    if module is None:
        if name.startswith("__"):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        try:
            return import_module(f"{__name__}.{name}")  # sets the attribute itself
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "Action",
    "Attempt",
    "Call",
    "CycleError",
    "EVENT_KINDS",
    "Entry",
    "Event",
    "InvalidArgument",
    "ManualClock",
    "Misfire",
    "Mode",
    "Outcome",
    "Overlap",
    "Refused",
    "RemoteResult",
    "RetryPolicy",
    "RunContext",
    "RunInterface",
    "Scheduler",
    "SyncExecutor",
    "StoreError",
    "SystemClock",
    "TRIGGER_RULES",
    "TaskCancelled",
    "TaskDefinition",
    "TaskInfo",
    "TaskState",
    "TaskTimeout",
    "TriggerRule",
    "current_run",
]
