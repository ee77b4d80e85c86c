"""Editing a task to fix it: what an edit changed, and the offer to run it again.

An edit is ``Scheduler.update``: the task keeps its attempts and, once settled,
its state. A FAILED task fixed this way still holds back the downstream it
skipped, so the window offers to run it again with that downstream (Run again,
``gui/clear.py``), saying first what will run.
"""

from __future__ import annotations

from taskloom.engine import TaskState
from taskloom.engine.command import Command

SCHEDULE_FIELDS = ("at", "after", "every", "mode", "cron", "timezone")
SETTING_FIELDS = (
    ("priority", "priority"),
    ("retry", "retries"),
    ("timeout", "timeout"),
    ("trigger_rule", "trigger rule"),
    ("overlap", "overlap"),
    ("misfire", "misfire"),
    ("misfire_grace", "misfire grace"),
)


def describe_changes(old, new) -> str:
    """What an edit changed, as the event log says it: "command changed, priority changed"."""
    changed = []
    if old.action != new.action:
        what = "command" if isinstance(new.action, Command) else "target"
        changed.append(f"{what} changed")
    if any(getattr(old, f) != getattr(new, f) for f in SCHEDULE_FIELDS):
        changed.append("schedule changed")
    if set(old.deps) != set(new.deps):
        changed.append("dependencies changed")
    changed += [
        f"{label} changed" for f, label in SETTING_FIELDS if getattr(old, f) != getattr(new, f)
    ]
    return ", ".join(changed) or "nothing changed"


def offers_run_again(state) -> bool:
    """An edit of a task in this state is a fix worth running again at once."""
    return state is TaskState.FAILED


def run_again_text(targets: list[str], tasks: dict) -> str:
    """ "will run fetch, then publish (skipped), report (skipped)" for the question."""
    first, *rest = targets
    after = ", ".join(f"{tid} ({tasks[tid].state.name.lower()})" for tid in rest if tid in tasks)
    return f"will run {first}" + (f", then {after}" if after else "")
