"""Opening the window for a workflow file: ``taskloom FILE`` ends up here."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

DEFAULT_WORKFLOW = Path(__file__).resolve().parent.parent / "resources" / "examples" / "etl.toml"


def _ensure_platform(screenshot: str | None) -> None:
    # A screenshot needs no screen: fall back to the offscreen platform on a headless box.
    headless = not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if screenshot and headless and sys.platform.startswith("linux"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


class WorkflowSession:
    """One loaded workflow: its engine and its window. Opening another replaces both."""

    def __init__(self, workflow, settings=None):
        from engine import Scheduler

        from .main_window import MainWindow

        self.workflow = workflow
        self.scheduler = Scheduler(workers=workflow.workers)
        workflow.schedule_into(self.scheduler)
        # The window subscribes before the engine starts, so its log has every run.
        self.window = MainWindow(self.scheduler, settings=settings, title=workflow.name)
        self.scheduler.start()
        self.window.saveRequested.connect(self.save)

    def save(self, path: str) -> None:
        """Write the workflow with the dependencies as they are now in the engine."""
        from engine.workflow import save

        for tid, spec in self.workflow.tasks.items():
            info = self.window.bridge.tasks.get(tid)
            if info is not None:
                spec.deps = list(info.deps)
        try:
            save(self.workflow, path)
        except (OSError, ValueError) as exc:
            self.window.statusBar().showMessage(f"⚠ Cannot save: {exc}", 8000)
            return
        self.window.statusBar().showMessage(f"Saved {path}", 4000)

    def close(self) -> None:
        self.window.close()
        self.window.deleteLater()
        self.scheduler.shutdown(wait=False)


class Sessions:
    """The open workflow; File > Open replaces it (new engine, new window)."""

    def __init__(self, settings=None):
        self.settings = settings
        self.current: WorkflowSession | None = None

    def open(self, path) -> bool:
        from engine.workflow import WorkflowError, load

        try:
            workflow = load(path)
        except WorkflowError as exc:
            if self.current is None:
                raise
            self.current.window.statusBar().showMessage(f"⚠ {exc}", 10000)
            return False
        old, self.current = self.current, WorkflowSession(workflow, self.settings)
        self.current.window.openRequested.connect(self.open)
        self.current.window.show()
        if old is not None:
            old.close()
        return True

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


def run_window(
    path: str | None, screenshot: str | None = None, quit_after: float | None = None
) -> int:
    """Show the window for the workflow at ``path`` (default: the bundled ETL example).

    With ``screenshot``, save a picture of the window after ``quit_after`` seconds
    (default 3) and exit 0. Returns the process exit code.
    """
    _ensure_platform(screenshot)
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from engine.workflow import WorkflowError

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Taskloom")
    app.setOrganizationName("Taskloom")
    settings = None
    if screenshot:  # a reproducible picture: default geometry, not the user's saved one
        ini = Path(tempfile.mkdtemp(prefix="taskloom-")) / "screenshot.ini"
        settings = QSettings(str(ini), QSettings.Format.IniFormat)
    sessions = Sessions(settings)
    try:
        sessions.open(path or DEFAULT_WORKFLOW)
    except WorkflowError as exc:
        print(exc, file=sys.stderr)
        return 2
    code = {"value": 0}

    def finish() -> None:
        if screenshot:
            picture = sessions.current.window.grab()
            if not picture.save(str(screenshot)):
                print(f"cannot write screenshot {screenshot}", file=sys.stderr)
                code["value"] = 1
        app.exit(code["value"])

    if screenshot or quit_after is not None:
        QTimer.singleShot(int(1000 * (3.0 if quit_after is None else quit_after)), finish)
    try:
        result = app.exec()
    finally:
        sessions.close()
    return code["value"] if screenshot else result
