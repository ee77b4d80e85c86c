"""Run again ("Clear", Airflow's word): a task, a task and its downstream, or the
whole workflow, within this run (``Scheduler.clear``).

Clearing re-runs commands, which no undo can take back, so the window first says
what will run again (``plan``) and asks.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QMessageBox

from taskloom.engine import Action
from taskloom.engine.run_api import RunInterface

from .fix_task import run_again_text


def clearable(run: RunInterface, task_id: str) -> bool:
    """Whether the engine takes ``task_id`` for ``clear`` now (``Action.CLEAR``)."""
    try:
        return run.why_not(task_id, Action.CLEAR) is None
    except KeyError:  # gone since the window last heard of it
        return False


def plan(run: RunInterface, ids: Iterable[str], downstream: bool) -> list[str]:
    """The tasks ``clear(ids, downstream)`` would run again (the engine's dry run,
    ``clear_plan``), of those of ``ids`` it takes now, in the run's order."""
    roots = [tid for tid in ids if clearable(run, tid)]
    if not roots:
        return []
    try:
        return run.clear_plan(roots, downstream)
    except (KeyError, ValueError):  # changed meanwhile
        return []


def why_not(run: RunInterface, ids: Iterable[str]) -> str | None:
    """Why none of ``ids`` can be cleared now (the engine's words), or None if one can."""
    first = None
    for tid in ids:
        try:
            why = run.why_not(tid, Action.CLEAR)
        except KeyError:
            continue
        if why is None:
            return None
        first = first or why
    return first or "Select a finished task to run it again"


class ClearQuestion:
    """Says what Clear will run again and does it once the person agrees."""

    def __init__(self, window):
        self.window = window
        self.box: QMessageBox | None = None

    def ask(self, ids, downstream: bool, what: str) -> list[str]:
        """Open the question (window-modal, not blocking); returns the plan shown."""
        tasks = self.window.bridge.tasks
        run = self.window.scheduler
        targets = plan(run, ids, downstream)
        if not targets:
            self.window._show_message(why_not(run, ids) or "Nothing to run again", True)
            return []
        count = len(targets)
        states = "\n".join(f"• {tid} ({tasks[tid].state.name.lower()})" for tid in targets)
        details = (
            f"{states}\n\nThey run again as soon as their dependencies allow; their "
            "earlier attempts stay in the inspector. Running commands cannot be undone."
        )
        new_run = new_run_text(self.window)
        if new_run:
            details = f"In this run (Run again):\n{details}\n\n{new_run}"
        return self._open(
            f"Clear {what}",
            f"Run {count} task{'s' if count != 1 else ''} again in this run?",
            details,
            targets,
            "Cancel",
            as_new_run=bool(new_run),
        )

    def ask_fixed(self, task_id: str) -> list[str]:
        """After an edit fixed a FAILED task: offer to run it again with the downstream
        it skipped. "Not now" leaves it FAILED (Run again later does the same)."""
        tasks = self.window.bridge.tasks
        targets = plan(self.window.scheduler, [task_id], True)
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

    def _open(self, title, text, details, targets, decline: str, as_new_run=False) -> list[str]:
        box = QMessageBox(self.window)
        box.setObjectName("clear_question")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(title)
        box.setText(text)
        box.setInformativeText(details)
        box.setStandardButtons(QMessageBox.StandardButton.Cancel)
        box.button(QMessageBox.StandardButton.Cancel).setText(decline)
        run = box.addButton("Run again", QMessageBox.ButtonRole.AcceptRole)
        fresh = None
        if as_new_run:
            fresh = box.addButton("As a new run", QMessageBox.ButtonRole.ActionRole)
            fresh.setObjectName("asNewRun")
        box.setDefaultButton(run)
        box.finished.connect(lambda _r: self._answered(box, run, targets, fresh))
        self.box = box
        box.open()
        return targets

    def _answered(self, box, run, targets, fresh=None) -> None:
        self.box = None
        box.deleteLater()
        if fresh is not None and box.clickedButton() is fresh:
            # The session starts it (app layer), once this box's signal has returned:
            # it may ask (a modal loop) and replaces this window.
            QTimer.singleShot(0, self.window, self.window.newRunRequested.emit)
            return
        if box.clickedButton() is not run:
            return
        try:
            cleared = self.window.scheduler.clear(targets)
        except (ValueError, KeyError, RuntimeError) as exc:  # changed meanwhile, or refused
            self.window._show_message(f"Cannot run again: {exc}", True)
            return
        self.window._show_message(f"Running again: {', '.join(cleared)}", False)


def new_run_text(window) -> str:
    """What "As a new run" would do, or "" where the window cannot start one (no store,
    no file, a watched run): the session says so through ``window.new_run_possible``."""
    if not window.new_run_possible:
        return ""
    run = window.scheduler.run
    name = window.document.path.name if window.document.path is not None else "the file"
    this = f"run {run}" if run is not None else "this run"
    following = f"run {run + 1}" if isinstance(run, int) else "a new run"
    unsaved = " (unsaved edits are not in it: save first)" if window.document.dirty else ""
    return (
        f"As a new run: every task of {name} as the file says now{unsaved} runs from "
        f"the start as {following}; {this} and its attempts stay in the history."
    )
