"""What the add-task dialog produces, and how it becomes one engine call.

A ``TaskSpec`` is the GUI's definition of a task: enough to schedule it again
under the same id (undo of a removal, an edit) and to write it into a workflow
file (``to_workflow``). Tasks read from a file become specs with ``from_workflow``.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from taskloom.engine import Call, Misfire, Mode, Overlap, RetryPolicy, TriggerRule, workflow
from taskloom.engine.command import Command
from taskloom.engine.workflow import schedule_one

SCHEDULE_KINDS = ("now", "at", "after", "every", "cron")


def make_command(text: str, like=None):
    """A command line, split like a shell would (no shell is run).

    ``like`` is a Command whose cwd and env the new one keeps (an edited command).
    """
    argv = shlex.split(text)
    if not argv:
        raise ValueError("the command is empty")
    if like is not None and isinstance(like, Command):
        return Command(argv, cwd=like.cwd, env=like.env)
    return Command(argv)


def make_call(ref: str, like=None) -> Call:
    ref = ref.strip()
    module, sep, func = ref.partition(":")
    if (
        not sep
        or not module
        or not func
        or not all(part.isidentifier() for part in (*module.split("."), *func.split(".")))
    ):
        raise ValueError("write it as package.module:function")
    return Call(ref, like.kwargs if isinstance(like, Call) else None)


def target_text(target) -> tuple[str, str] | None:
    """("command" | "call", the text the dialog shows), or None for a Python object."""
    if isinstance(target, Call):
        return "call", target.ref
    argv = getattr(target, "argv", None)
    if argv is not None:
        return "command", argv if isinstance(argv, str) else shlex.join(argv)
    return None


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
    # Settings a workflow file can hold that the dialog does not show; kept through edits.
    trigger_rule: str = TriggerRule.ALL_SUCCESS
    mode: str = Mode.FIXED_RATE
    overlap: str = Overlap.SKIP
    misfire: str = Misfire.RUN_ONCE
    misfire_grace: float = 30.0

    def submit(self, scheduler, name: str | None = None) -> str:
        """Schedule on ``scheduler``; returns the task id."""
        common = dict(
            name=name or self.name or None,
            deps=tuple(self.deps),
            priority=self.priority,
            retry=self.retry,
            timeout=self.timeout,
            trigger_rule=self.trigger_rule,
        )
        recurring = dict(
            overlap=self.overlap, misfire=self.misfire, misfire_grace=self.misfire_grace
        )
        when = {"at": self.at, "after": self.delay, "every": self.interval, "cron": self.cron}
        return schedule_one(
            scheduler,
            self.target,
            self.schedule,
            when=when.get(self.schedule),
            mode=self.mode,
            tz=self.tz,
            options=common,
            recurring=recurring,
        )


_KIND_FROM_FILE = {"deps": "now", "at": "at", "after": "after", "every": "every", "cron": "cron"}


def from_workflow(task, base_dir: Path) -> TaskSpec:
    """The GUI spec of one ``engine.workflow.TaskSpec`` (a ``[tasks.NAME]`` table)."""
    return TaskSpec(
        name=task.name,
        target=task.action(base_dir),
        schedule=_KIND_FROM_FILE[task.schedule_kind],
        at=task.at,
        delay=task.after,
        interval=task.every,
        cron=task.cron,
        tz=task.timezone or "UTC",
        priority=task.priority,
        retry=task.retry,
        timeout=task.timeout,
        deps=tuple(task.deps),
        trigger_rule=task.trigger_rule,
        mode=task.mode,
        overlap=task.overlap,
        misfire=task.misfire,
        misfire_grace=task.misfire_grace,
    )


def to_workflow(spec: TaskSpec, task_id: str, deps, base_dir: Path):
    """The ``engine.workflow.TaskSpec`` to write for ``spec``; ValueError if it has no file form."""
    task = workflow.TaskSpec(name=task_id)
    target = spec.target
    if isinstance(target, Call):
        task = replace(task, call=target.ref, args=dict(target.kwargs))
    elif getattr(target, "argv", None) is not None:
        cwd = None
        if target.cwd is not None:  # as the file writes it: relative to the file when inside
            cwd = os.path.relpath(target.cwd, base_dir)
            cwd = None if cwd == "." else cwd
        command = target.argv if isinstance(target.argv, str) else list(target.argv)
        task = replace(task, command=command, shell=target.shell, cwd=cwd, env=dict(target.env))
    else:
        raise ValueError(f"{task_id} runs a Python object, which a workflow file cannot hold")
    times = {
        "at": {"at": spec.at},
        "after": {"after": spec.delay},
        "every": {"every": spec.interval, "mode": spec.mode},
        "cron": {"cron": spec.cron, "timezone": spec.tz},
    }.get(spec.schedule, {})
    recurring = spec.schedule in ("every", "cron")
    return replace(
        task,
        **times,
        deps=list(deps),
        priority=spec.priority,
        retry=spec.retry,
        timeout=spec.timeout,
        trigger_rule=spec.trigger_rule,
        **(
            dict(overlap=spec.overlap, misfire=spec.misfire, misfire_grace=spec.misfire_grace)
            if recurring
            else {}
        ),
    )
