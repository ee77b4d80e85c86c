"""What the add-task dialog produces, and how it becomes one engine call."""

from __future__ import annotations

import importlib
import shlex
from dataclasses import dataclass, field
from datetime import datetime

from engine import Call, RetryPolicy

SCHEDULE_KINDS = ("now", "at", "after", "every", "cron")


def make_command(text: str):
    """A command line, split like a shell would (no shell is run)."""
    argv = shlex.split(text)
    if not argv:
        raise ValueError("the command is empty")
    command_module = importlib.import_module("engine.command")  # written in parallel; lazy
    return command_module.Command(argv)


def make_call(ref: str) -> Call:
    ref = ref.strip()
    module, sep, func = ref.partition(":")
    if (
        not sep
        or not module
        or not func
        or not all(part.isidentifier() for part in (*module.split("."), *func.split(".")))
    ):
        raise ValueError("write it as package.module:function")
    return Call(ref)


@dataclass
class TaskSpec:
    name: str
    target: object  # a Command, a Call, or any callable
    schedule: str = "now"  # one of SCHEDULE_KINDS
    at: datetime | None = None
    delay: float | None = None  # seconds, for "after"
    interval: float | None = None  # seconds, for "every"
    cron: str | None = None
    tz: str = "UTC"
    priority: int = 0
    retry: RetryPolicy | None = None
    timeout: float | None = None
    deps: tuple[str, ...] = field(default_factory=tuple)

    def submit(self, scheduler, name: str | None = None) -> str:
        """Schedule on ``scheduler``; returns the task id."""
        common = dict(
            name=name or self.name or None,
            deps=tuple(self.deps),
            priority=self.priority,
            retry=self.retry,
            timeout=self.timeout,
        )
        if self.schedule == "at":
            return scheduler.schedule(self.target, self.at, **common)
        if self.schedule == "after":
            return scheduler.schedule_after(self.target, self.delay, **common)
        if self.schedule == "every":
            return scheduler.schedule_every(self.target, self.interval, **common)
        if self.schedule == "cron":
            return scheduler.schedule_cron(self.target, self.cron, tz=self.tz, **common)
        return scheduler.schedule(self.target, None, **common)
