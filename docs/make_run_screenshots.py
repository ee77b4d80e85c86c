"""Pictures of the run as a whole: the run header, the Runs view, a past run opened
read-only, the inspector's definition and "why not", the timeline with a recurring
task, and the whole window at 820x520.

    python docs/make_run_screenshots.py

Three runs of one workflow in a throwaway store (the first fails at ``clean``), built
in-process with the real window offscreen and saved with ``grab()``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QRect, QSettings, Qt
from PySide6.QtWidgets import QApplication

DOCS = Path(__file__).resolve().parent
PY = "python3"  # on PATH; the pictures show commands as a person writes them


def workflow() -> str:
    marker, go = "cleaned-once", "go"  # in the file's folder, the tasks' folder
    # clean fails the first time only; load waits for the file "go" (mid-run pictures).
    flaky = (
        f"import os, sys, time; time.sleep(0.4); p = {marker!r}; "
        "seen = os.path.exists(p); open(p, 'w').close(); "
        "print('3 rows without a date' if not seen else 'ok'); sys.exit(0 if seen else 2)"
    )
    wait = f"import os, time; time.sleep(0.6)\nwhile not os.path.exists({go!r}): time.sleep(0.05)"
    quick = json.dumps([PY, "-c", "import time; time.sleep(0.5)"])
    return (
        '[workflow]\nname = "etl"\nworkers = 2\n\n'
        f"[tasks.extract]\ncommand = {quick}\n\n"
        f'[tasks.clean]\ncommand = {json.dumps([PY, "-c", flaky])}\ndeps = ["extract"]\n'
        "retry = { max_attempts = 1 }\n\n"
        f'[tasks.load]\ncommand = {json.dumps([PY, "-c", wait])}\ndeps = ["clean"]\n'
        'timeout = "10m"\n\n'
        f'[tasks.report]\ncommand = {quick}\ndeps = ["load"]\nretry = 3\n\n'
        f'[tasks.heartbeat]\ncommand = {json.dumps([PY, "-c", "pass"])}\nevery = "10s"\n'
    )


def wait_until(app, condition, seconds=30.0):
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)
    if not condition():
        raise SystemExit("timed out waiting for the window")


def settle(app, seconds=0.3):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)


def save(pixmap, name):
    pixmap.save(str(DOCS / name), "PNG", 0)
    print("wrote", DOCS / name)


def main() -> None:
    from taskloom.app import WorkflowSession
    from taskloom.engine import TaskState as S
    from taskloom.engine.workflow import load

    app = QApplication.instance() or QApplication([])
    scratch = Path(tempfile.mkdtemp(prefix="taskloom-shots-"))
    settings = QSettings(str(scratch / "s.ini"), QSettings.Format.IniFormat)
    source = scratch / "etl.toml"
    source.write_text(workflow(), encoding="utf-8")
    paths = dict(db_path=scratch / "run.db", log_dir=scratch / "logs")
    go = scratch / "go"
    one_shot = ("extract", "clean", "load", "report")

    def over(session):
        return all(session.window.bridge.tasks[t].state.settled for t in one_shot)

    # Run 1 fails at clean; run 2 succeeds (load goes at once).
    for fresh in (False, True):
        if fresh:
            go.write_text("")
        session = WorkflowSession(load(source), settings, fresh=fresh, **paths)
        session.window.show()
        wait_until(app, lambda s=session: over(s))
        session.close()
    go.unlink()

    # Run 3, mid-run: load waits, report waits for it. Its own settings: the window
    # lays itself out for 820x520 as a first-time user's does (a layout saved at a
    # bigger size and restored there leaves the graph less).
    first_time = QSettings(str(scratch / "s3.ini"), QSettings.Format.IniFormat)
    session = WorkflowSession(load(source), first_time, fresh=True, **paths)
    window = session.window
    window.resize(820, 520)  # a small window, as it opens
    window.show()
    tasks = window.bridge.tasks
    wait_until(app, lambda: tasks["load"].state is S.RUNNING)
    wait_until(app, lambda: window.forecast_view.live is not None)
    window.select_tasks(["load"])
    settle(app, 1.0)
    save(window.grab(), "window-820x520.png")
    window.resize(1400, 760)
    window.select_tasks(["report"])
    window.inspector_dock.show()
    settle(app, 1.0)
    header = window.centralWidget()
    bottom = window.filter_bar.geometry().bottom() + 2  # the legend and the run header
    save(header.grab(QRect(0, 0, header.width(), bottom)), "run-header.png")
    save(window.inspector_dock.grab(), "inspector-why-not.png")

    timeline = window.timeline
    window.resizeDocks(
        [window.timeline_dock, window.event_dock], [760, 240], Qt.Orientation.Horizontal
    )
    timeline.canvas.set_span(300.0)  # five minutes: thirty heartbeats
    timeline.select("heartbeat")
    settle(app, 1.0)
    save(window.timeline_dock.grab(), "timeline-recurring.png")
    timeline.follow_now()

    window.resize(1200, 720)
    settle(app, 0.5)

    window.runs_dock.show()
    window.runs_dock.raise_()
    view = window.runs_view
    wait_until(app, lambda: view.grid is not None and len(view.grid.runs) == 3)
    settle(app, 0.5)
    save(window.runs_dock.grab(), "runs-view.png")

    window.resize(1300, 800)
    window.event_dock.raise_()
    window.resizeDocks([window.timeline_dock], [190], Qt.Orientation.Vertical)
    window.resizeDocks([window.inspector_dock], [330], Qt.Orientation.Horizontal)
    window.open_past_run(view.grid.runs[0])
    wait_until(app, window.past_run_bar.isVisible)
    window.select_tasks(["clean"])
    settle(app, 1.0)
    save(window.grab(), "past-run.png")
    window.back_to_live()
    go.write_text("")
    wait_until(app, lambda: over(session))
    session.close()


if __name__ == "__main__":
    main()
