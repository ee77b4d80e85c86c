"""What a workflow file says should happen when its tasks fail, retry or succeed, and
when its run finishes: hook commands and ready-made notification sinks.

``HookSettings`` is the checked form of the hook keys of a workflow file (format in
docs/workflow-file.md, 6.1: ``on_failure``, ``on_retry``, ``on_success`` in
``[workflow]`` and in a ``[tasks.NAME]`` table, whose own one wins; ``on_finish``,
``hook_timeout`` and ``[workflow.notify]`` in ``[workflow]`` only). It holds no
process or thread: ``taskloom.hooks`` runs them for the process that owns the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TASK_EVENTS = ("failure", "retry", "success")  # on_<event> in [workflow] and [tasks.NAME]
RUN_EVENTS = ("finish",)  # on_finish: the whole run, [workflow] only
EVENTS = TASK_EVENTS + RUN_EVENTS
TASK_HOOK_KEYS = tuple(f"on_{event}" for event in TASK_EVENTS)
WORKFLOW_HOOK_KEYS = (*TASK_HOOK_KEYS, "on_finish", "hook_timeout")
NOTIFY_KEYS = ("desktop", "webhook", "events")
DEFAULT_TIMEOUT = 30.0
DEFAULT_NOTIFY_EVENTS = ("failure", "finish")

HookCommand = str | tuple[str, ...]  # a string runs in /bin/sh; a tuple is an argv


@dataclass(frozen=True)
class HookSettings:
    """The hooks of one workflow. ``commands`` maps an event to the workflow's hook
    command; ``task_commands`` maps a task to its own (which win over the
    workflow's); ``timeout`` bounds every hook and sink; ``desktop``, ``webhook``
    and ``notify_events`` configure the ready-made sinks."""

    commands: dict[str, HookCommand] = field(default_factory=dict)
    task_commands: dict[str, dict[str, HookCommand]] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    desktop: bool = False
    webhook: str | None = None
    notify_events: tuple[str, ...] = DEFAULT_NOTIFY_EVENTS

    def command_for(self, event: str, task: str | None = None) -> HookCommand | None:
        """The command for ``event`` of ``task`` (its own, else the workflow's)."""
        if task is not None:
            own = self.task_commands.get(task, {}).get(event)
            if own is not None:
                return own
        return self.commands.get(event)

    def sinks_for(self, event: str) -> bool:
        """Whether the ready-made sinks (desktop, webhook) hear ``event``."""
        return (self.desktop or self.webhook is not None) and event in self.notify_events

    @property
    def empty(self) -> bool:
        """Nothing to run: no command and no sink."""
        return (
            not self.commands
            and not any(self.task_commands.values())
            and not self.desktop
            and self.webhook is None
        )

    def without_tasks(self, keep) -> HookSettings:
        """The same settings with only the task hooks of the tasks in ``keep``."""
        from dataclasses import replace

        kept = {tid: hooks for tid, hooks in self.task_commands.items() if tid in keep}
        return replace(self, task_commands=kept)


def as_toml(command: HookCommand):
    """A hook command as a workflow file writes it: a string, or an argv list."""
    return command if isinstance(command, str) else list(command)


__all__ = [
    "EVENTS",
    "HookCommand",
    "HookSettings",
    "NOTIFY_KEYS",
    "TASK_EVENTS",
    "TASK_HOOK_KEYS",
    "WORKFLOW_HOOK_KEYS",
    "as_toml",
]
