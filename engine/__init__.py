"""Taskloom's engine: a threaded scheduler library, pure Python, no Qt."""

from taskloom import __version__ as __version__  # one version source: taskloom/__init__.py

from ._core.scheduler import EVENT_KINDS, TRIGGER_RULES, Scheduler
from ._jobs.context import RemoteResult, RunContext, current_run
from .actions import Call
from .clock import ManualClock, SystemClock
from .definitions import TaskDefinition
from .errors import CycleError, InvalidArgument, TaskCancelled, TaskTimeout
from .executors import SyncExecutor
from .models import Action, Attempt, Entry, Event, RetryPolicy, TaskInfo
from .options import Misfire, Mode, Outcome, Overlap, TriggerRule
from .states import TaskState
from .store import StoreError  # raised by a Scheduler whose store failed, and by reads

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
    "RemoteResult",
    "RetryPolicy",
    "RunContext",
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
