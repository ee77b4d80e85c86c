"""Helpers of the add-task dialog: a task's action from the text typed, and back.

The dialog produces an engine ``TaskDefinition`` (engine/definitions.py); the
engine keeps it (``Scheduler.definition``), and undo, edits and Save use it.
"""

from __future__ import annotations

import shlex

from taskloom.engine import Call
from taskloom.engine.command import Command

SCHEDULE_KINDS = ("now", "at", "after", "every", "cron")


def schedule_choice(definition) -> str:
    """The dialog's schedule choice for a definition: "now" for one with no time."""
    kind = definition.schedule_kind
    return "now" if kind == "deps" else kind


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
