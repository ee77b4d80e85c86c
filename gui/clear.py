"""Run again ("Clear", Airflow's word): a task, a task and its downstream, or the
whole workflow, within this run (``Scheduler.clear``).

Clearing re-runs commands, which no undo can take back, so the window first says
what will run again (``plan``) and asks.
"""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from taskloom.engine import TaskState

from .fix_task import run_again_text

S = TaskState


def clearable(info) -> bool:
    """A settled one-shot task (what ``Scheduler.clear`` accepts)."""
    return info.state.settled and not info.recurring and info.state is not S.RUNNING


def plan(tasks: dict, ids, downstream: bool) -> list[str]:
    """The tasks ``clear(ids, downstream)`` would run again, in the window's order."""
    chosen = {tid for tid in ids if tid in tasks and clearable(tasks[tid])}
    if downstream:
        stack = [d for tid in chosen for d in tasks[tid].dependents]
        while stack:
            tid = stack.pop()
            info = tasks.get(tid)
            if info is None or tid in chosen or info.recurring:
                continue
            if clearable(info):
                chosen.add(tid)
            stack.extend(info.dependents)
    return [tid for tid in tasks if tid in chosen]


def why_not(tasks: dict, ids) -> str | None:
    """Why none of ``ids`` can be cleared now, or None if one can."""
    infos = [tasks[tid] for tid in ids if tid in tasks]
    if not infos:
        return "Select a finished task to run it again"
    if any(clearable(info) for info in infos):
        return None
    info = infos[0]
    if info.recurring:
        return f"{info.id} is recurring: use Run now for an extra run"
    return f"{info.id} is {info.state.name.lower()}: only a finished task can run again"


class ClearQuestion:
    """Says what Clear will run again and does it once the person agrees."""

    def __init__(self, window):
        self.window = window
        self.box: QMessageBox | None = None

    def ask(self, ids, downstream: bool, what: str) -> list[str]:
        """Open the question (window-modal, not blocking); returns the plan shown."""
        tasks = self.window.bridge.tasks
        targets = plan(tasks, ids, downstream)
        if not targets:
            self.window._show_message(why_not(tasks, ids) or "Nothing to run again", True)
            return []
        count = len(targets)
        states = "\n".join(f"• {tid} ({tasks[tid].state.name.lower()})" for tid in targets)
        details = (
            f"{states}\n\nThey run again as soon as their dependencies allow; their "
            "earlier attempts stay in the inspector. Running commands cannot be undone."
        )
        return self._open(
            f"Clear {what}",
            f"Run {count} task{'s' if count != 1 else ''} again in this run?",
            details,
            targets,
            "Cancel",
        )

    def ask_fixed(self, task_id: str) -> list[str]:
        """After an edit fixed a FAILED task: offer to run it again with the downstream
        it skipped. "Not now" leaves it FAILED (Run again later does the same)."""
        tasks = self.window.bridge.tasks
        targets = plan(tasks, [task_id], True)
        if not targets:
            return []
        return self._open(
            f"Run {task_id} again",
            f"{task_id} is fixed: run it again in this run?",
            f"This {run_again_text(targets, tasks)}. Its earlier attempts stay in the "
            "inspector; Undo puts the old definition back, but cannot un-run commands.",
            targets,
            "Not now",
        )

    def _open(self, title, text, details, targets, decline: str) -> list[str]:
        box = QMessageBox(self.window)
        box.setObjectName("clear_question")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(title)
        box.setText(text)
        box.setInformativeText(details)
        box.setStandardButtons(QMessageBox.StandardButton.Cancel)
        box.button(QMessageBox.StandardButton.Cancel).setText(decline)
        run = box.addButton("Run again", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(run)
        box.finished.connect(lambda _r: self._answered(box, run, targets))
        self.box = box
        box.open()
        return targets

    def _answered(self, box, run, targets) -> None:
        self.box = None
        box.deleteLater()
        if box.clickedButton() is not run:
            return
        try:
            cleared = self.window.scheduler.clear(targets)
        except (ValueError, KeyError, RuntimeError) as exc:  # changed meanwhile
            self.window._show_message(f"Cannot run again: {exc}", True)
            return
        self.window._show_message(f"Running again: {', '.join(cleared)}", False)
