"""The README's forecast pictures, reproducibly:

    python docs/make_forecast_screenshots.py

- ``forecast-eta.png``: the bundled ETL example mid-run, after two earlier runs in a
  throwaway store taught the forecast its durations: the ETA in the status bar, the
  critical path on the graph, ghost bars on the timeline, the duration sparkline.
- ``forecast-24h.png``: a nightly workflow 24 hours ahead on a virtual clock (nothing
  runs): every occurrence as a ghost, and the collisions (an overlap=skip task whose
  runs outlast its interval) marked on the timeline.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ETL = ROOT / "resources" / "examples" / "etl.toml"

NIGHTLY = """\
[workflow]
name = "nightly"
workers = 2

[tasks.sync_orders]
command = ["true"]
every = "2h"
expected = "2h30m"

[tasks.backup]
command = ["true"]
cron = "0 2 * * *"
timezone = "Europe/Berlin"
expected = "40m"

[tasks.vacuum]
command = ["true"]
cron = "30 1 * * *"
timezone = "Europe/Berlin"
expected = "1h"

[tasks.reindex]
command = ["true"]
cron = "0 */6 * * *"
expected = "20m"

[tasks.export]
command = ["true"]
deps = ["backup"]
expected = "15m"
"""


def eta_picture(scratch: Path) -> None:
    taskloom = [sys.executable, "-m", "taskloom"]
    db = scratch / "etl.db"
    for _ in range(2):  # history: what the forecast learns durations from
        subprocess.run([*taskloom, "run", str(ETL), "--db", str(db), "--fresh"], check=True)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    shot = [*taskloom, str(ETL), "--db", str(db), "--fresh", "--select", "clean_b"]
    shot += ["--screenshot", str(HERE / "forecast-eta.png"), "--quit-after", "3.2"]
    subprocess.run(shot, check=True, env=env)


def day_picture(scratch: Path) -> None:
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from concurrent.futures import Future
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from taskloom.engine import ManualClock, Scheduler, SyncExecutor
    from taskloom.engine.workflow import load
    from taskloom.gui.main_window import MainWindow

    class NeverEnds(SyncExecutor):  # the clock never moves: nothing would end anyway
        def submit(self, fn, /, *args, **kwargs):
            future: Future = Future()
            future.set_running_or_notify_cancel()
            return future

    app = QApplication.instance() or QApplication([])
    path = scratch / "nightly.toml"
    path.write_text(NIGHTLY)
    workflow = load(path)
    evening = datetime(2026, 3, 2, 21, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    scheduler = Scheduler(workflow.workers, clock=ManualClock(0.0, evening), executor=NeverEnds())
    workflow.schedule_into(scheduler)
    scheduler.start()
    settings = QSettings(str(scratch / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(scheduler, settings=settings, title="nightly", workflow=workflow)
    window.resize(1400, 900)
    window.show()
    window.timeline.set_span(86400)
    view = window.forecast_view
    view.forecaster.request()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        app.processEvents()
        live = view.live
        if live is not None and (live.forecast.horizon or 0) > 60000:
            break
        time.sleep(0.05)
    window.select_tasks(["sync_orders"])
    for _ in range(10):
        app.processEvents()
        time.sleep(0.05)
    window.grab().save(str(HERE / "forecast-24h.png"))
    view.close()
    window.close()
    scheduler.shutdown(wait=False)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="taskloom-shots-") as scratch:
        eta_picture(Path(scratch))
        day_picture(Path(scratch))
