"""Reopening a file whose stored run is unfinished and differs from it: resume, or start anew.

The window asks before the run starts (``taskloom run`` resumes without asking).
The differences come from ``taskloom.runs.RunDifferences``: tasks added, removed
and changed, by the definitions' fingerprints.
"""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QPushButton

RESUME_LABEL = "Resume the stored run"
NEW_RUN_LABEL = "Apply the file: start a new run"


def describe(differences) -> list[str]:
    """One line per kind of difference, for the dialog's text and its details."""
    lines = []
    if differences.added:
        lines.append(f"added in the file: {', '.join(differences.added)}")
    if differences.removed:
        lines.append(f"removed from the file: {', '.join(differences.removed)}")
    redefined = [tid for tid in differences.changed if tid not in differences.kept]
    if redefined:
        names = ", ".join(redefined)
        lines.append(f"changed in the file (a resume runs them as the file says): {names}")
    if differences.kept:
        names = ", ".join(differences.kept)
        lines.append(f"changed after they succeeded (a resume keeps them): {names}")
    return lines


class RunChoiceBox(QMessageBox):
    """The question, with its two answers' buttons (``resume`` None when it cannot)."""

    resume: QPushButton | None = None
    new_run: QPushButton | None = None


def run_choice_box(parent, name: str, differences) -> RunChoiceBox:
    """The question, not yet shown: its buttons are ``box.resume`` (None when the run
    cannot be resumed) and ``box.new_run``."""
    box = RunChoiceBox(parent)
    box.setObjectName("run_choice")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Taskloom: the file differs from its unfinished run")
    lines = describe(differences)
    box.setText(
        f"{name}: the stored run is unfinished ({differences.done} of {differences.total} "
        "tasks done) and the file differs from it."
    )
    if differences.resumable:
        info = (
            "Resume keeps the finished work and runs what is left. "
            "A new run applies the file and runs every task again."
        )
    else:
        info = "Tasks the file removed cannot be resumed: a new run starts from the file."
    box.setInformativeText(info + "\n\n" + "\n".join("• " + line for line in lines))
    box.setDetailedText("\n".join(lines))
    if differences.resumable:
        box.resume = box.addButton(RESUME_LABEL, QMessageBox.ButtonRole.AcceptRole)
    box.new_run = box.addButton(NEW_RUN_LABEL, QMessageBox.ButtonRole.DestructiveRole)
    # Enter and Escape keep what is stored: nothing finished is run again by accident.
    box.setDefaultButton(box.resume or box.new_run)
    box.setEscapeButton(box.resume or box.new_run)
    return box


def ask_resume_or_new(parent, name: str, differences) -> bool:
    """True to resume the stored run, False to apply the file and start a new run."""
    box = run_choice_box(parent, name, differences)
    box.exec()
    return box.resume is not None and box.clickedButton() is box.resume
