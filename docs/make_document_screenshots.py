"""Pictures of the problems panel, the Run again (Clear) question and live output.

    python docs/make_document_screenshots.py

Built in-process (the real window, a throwaway data dir), saved with
``window.grab()``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

DOCS = Path(__file__).resolve().parent
PY = sys.executable

BROKEN = """# A workflow with mistakes in it
[workflow]
name = "nightly"

[tasks.fetch]
command = ["python3", "fetch.py"]
retry = { max_attempts = 0 }
timeout = "ten minutes"

[tasks.publish]
command = ["python3", "publish.py"]
deps = ["fetch", "trasnform"]
trigger_rule = "all_sucess"
"""

CHAIN = f"""[workflow]
name = "etl"
workers = 2

[tasks.extract]
command = ["{PY}", "-c", "pass"]

[tasks.clean]
command = ["{PY}", "-c", "pass"]
deps = ["extract"]

[tasks.load]
command = ["{PY}", "-c", "pass"]
deps = ["clean"]

[tasks.report]
command = ["{PY}", "-c", "pass"]
deps = ["load"]
"""


def wait_until(app, condition, seconds=10.0):
    import time

    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def grab(app, widget, name):
    for _ in range(20):
        app.processEvents()
    widget.grab().save(str(DOCS / name), "PNG", 0)
    print("wrote", DOCS / name)


def main() -> None:
    from taskloom.app import Sessions
    from taskloom.engine.workflow import WorkflowError

    app = QApplication.instance() or QApplication([])
    scratch = Path(tempfile.mkdtemp(prefix="taskloom-shots-"))
    settings = QSettings(str(scratch / "s.ini"), QSettings.Format.IniFormat)
    broken = scratch / "nightly.toml"
    broken.write_text(BROKEN, encoding="utf-8")
    sessions = Sessions(settings, data_dir=scratch / "data")
    try:
        sessions.open(broken)
    except WorkflowError:
        pass
    window = sessions.current.window
    window.resize(1200, 700)
    window.show()
    grab(app, window, "problems-panel.png")
    sessions.close()

    chain = scratch / "etl.toml"
    chain.write_text(CHAIN, encoding="utf-8")
    sessions = Sessions(settings, data_dir=scratch / "data2")
    sessions.open(chain)
    window = sessions.current.window
    window.resize(1200, 700)
    window.show()
    wait_until(app, lambda: all(i.state.settled for i in window.bridge.tasks.values()))
    window.select_tasks(["clean"])
    window.act_clear_downstream.trigger()
    box = window.clear_question.box
    for _ in range(20):
        app.processEvents()
    # The question is a separate top-level: paint it over the window's picture.
    from PySide6.QtGui import QPainter

    picture = window.grab()
    painter = QPainter(picture)
    shot = box.grab()
    painter.drawPixmap((picture.width() - shot.width()) // 2, 180, shot)
    painter.end()
    picture.save(str(DOCS / "clear-preview.png"), "PNG", 0)
    print("wrote", DOCS / "clear-preview.png")
    box.reject()
    sessions.close()

    # Live output: a command that has printed part of its work and is still running.
    sentinel = scratch / "go"
    script = (
        "import os, time\n"
        "for n in range(1, 13):\n"
        "    print(f'loading batch {n:>2}/40: 2,500 rows', flush=True)\n"
        f"while not os.path.exists({str(sentinel)!r}): time.sleep(0.05)\n"
    )
    live = scratch / "live.toml"
    live.write_text(
        '[workflow]\nname = "import"\nworkers = 2\n\n'
        f'[tasks.download]\ncommand = ["{PY}", "-c", "pass"]\n\n'
        f"[tasks.load]\ncommand = {json.dumps([PY, '-c', script])}\n"
        'deps = ["download"]\n\n'
        f'[tasks.report]\ncommand = ["{PY}", "-c", "pass"]\ndeps = ["load"]\n',
        encoding="utf-8",
    )
    sessions = Sessions(settings, data_dir=scratch / "data3")
    sessions.open(live)
    window = sessions.current.window
    window.resize(1200, 700)
    window.show()
    window.select_tasks(["load"])
    wait_until(app, lambda: "batch 12/40" in window.inspector.output.toPlainText())
    grab(app, window, "live-output.png")
    sentinel.write_text("")
    sessions.close()


if __name__ == "__main__":
    main()
