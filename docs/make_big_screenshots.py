"""Pictures of a 20,000-task workflow in the window: its groups, one group expanded,
and the failed-only filter.

    python docs/make_big_screenshots.py

Built in-process: a real Scheduler (4 worker threads) runs 20,000 Python tasks in
twelve groups (named ``group.task-N``); about one in 800 fails, what waits for a
failure is skipped, and one gate task keeps the ``publish`` group pending. Saved
with ``window.grab()`` once the graph is drawn.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

DOCS = Path(__file__).resolve().parent
GROUPS = (
    ("ingest", 3000),
    ("validate", 3000),
    ("clean", 2500),
    ("enrich", 2500),
    ("features", 2000),
    ("train", 1500),
    ("score", 1500),
    ("aggregate", 1200),
    ("report", 1000),
    ("alerts", 40),
    ("archive", 1200),
    ("publish", 560),
)
STAGES = {  # which group's tasks each group waits for
    "validate": "ingest",
    "clean": "validate",
    "enrich": "clean",
    "features": "enrich",
    "train": "features",
    "score": "train",
    "aggregate": "score",
    "report": "aggregate",
    "alerts": "score",
    "archive": "clean",
    "publish": "report",
}
GATE = threading.Event()


def ok() -> None:
    return None


def broken() -> None:
    raise RuntimeError("upstream file missing")


def gate() -> None:
    GATE.wait(120)


def build(scheduler) -> int:
    rng = random.Random(20)
    made: dict[str, list[str]] = {}
    for group, count in GROUPS:
        upstream = made.get(STAGES.get(group, ""), [])
        names = made[group] = []
        for i in range(count):
            name = f"{group}.task-{i + 1}"
            deps = rng.sample(upstream, min(len(upstream), rng.randint(1, 2))) if upstream else []
            if group == "publish" and i == 0:
                scheduler.add(gate, name="publish.gate", deps=deps)
                names.append("publish.gate")
                continue
            if group == "publish":
                deps = ["publish.gate"]
            action = broken if rng.random() < 1 / 800 else ok
            scheduler.add(action, name=name, deps=deps)
            names.append(name)
    return sum(len(v) for v in made.values())


def wait_until(app, condition, seconds=60.0) -> bool:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        app.processEvents()
        time.sleep(0.01)
    return True


def grab(app, window, name) -> None:
    wait_until(app, window.scene.is_drawn)
    for _ in range(20):
        app.processEvents()
    window.grab().save(str(DOCS / name), "PNG", 0)
    print("wrote", DOCS / name)


def main() -> None:
    from taskloom.engine import Scheduler, TaskState
    from taskloom.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    scheduler = Scheduler(workers=4)
    total = build(scheduler)
    scheduler.start()
    ini = Path(tempfile.mkdtemp(prefix="taskloom-shots-")) / "shots.ini"
    window = MainWindow(scheduler, settings=QSettings(str(ini), QSettings.Format.IniFormat))
    window.resize(1400, 900)
    window.show()
    try:
        # Everything but the gated publish group finishes.
        settled = {TaskState.SUCCEEDED, TaskState.FAILED, TaskState.SKIPPED}
        wait_until(
            app,
            lambda: sum(t.state in settled for t in window.bridge.tasks.values()) >= total - 560,
            seconds=120,
        )
        wait_until(app, lambda: window.scene.is_drawn() and len(window.scene.tasks) == total)
        window.graph_view.fit(readable=False)
        grab(app, window, "big-groups.png")

        view = window.graph_view
        view._expand("alerts")  # as a double-click on it does
        wait_until(app, window.scene.is_drawn)
        view.resetTransform()  # zoomed in enough to read the names
        view.scale(0.7, 0.7)
        view._update_detail()
        view._following_fit = False  # a resize must not fit it all again
        wait_until(app, lambda: False, seconds=0.3)
        view.centerOn(window.scene.nodes["alerts.task-20"].sceneBoundingRect().center())
        grab(app, window, "big-group-expanded.png")

        window.scene.collapse("alerts")
        window.filter_bar.states.setCurrentIndex(2)  # failed only
        wait_until(app, window.scene.is_drawn)
        window.scene.expand_all()
        wait_until(app, window.scene.is_drawn)
        view.fit(readable=False)
        grab(app, window, "big-failed-filter.png")
    finally:
        GATE.set()
        window.close_question.enabled = False
        window.close()
        scheduler.shutdown(wait=True)


if __name__ == "__main__":
    main()
