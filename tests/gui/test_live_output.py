"""The inspector follows a running command's output as its log fills."""

from __future__ import annotations

import sys

from taskloom.engine import Scheduler, TaskState
from taskloom.engine.command import Command
from taskloom.gui.live_output import LogTail

S = TaskState


def test_log_tail_keeps_only_the_end_of_a_growing_file(tmp_path):
    log = tmp_path / "out.log"
    log.write_bytes(b"")
    tail = LogTail(keep=1000)
    tail.follow(str(log))
    assert not tail.poll()  # nothing yet
    with log.open("ab") as stream:
        stream.write(b"a" * 5000 + b"\nlast line\n")
    assert tail.poll()
    assert len(tail.data) <= 1000  # bounded, however much was written
    assert tail.text.startswith("…") and tail.text.endswith("last line\n")
    with log.open("ab") as stream:
        stream.write(b"more\n")
    assert tail.poll() and tail.text.endswith("last line\nmore\n")
    assert len(tail.data) <= 1000


def test_inspector_shows_a_running_commands_output_before_it_ends(qtbot, make_window, tmp_path):
    sentinel = tmp_path / "go"
    script = (
        "import os, time\n"
        "print('first line', flush=True)\n"
        f"while not os.path.exists({str(sentinel)!r}): time.sleep(0.01)\n"
        "print('done')\n"
    )
    scheduler = Scheduler(workers=1, log_dir=str(tmp_path / "logs"))
    try:
        scheduler.add(Command([sys.executable, "-c", script]), name="slow")
        window = make_window(scheduler)
        scheduler.start()
        window.select_tasks(["slow"])
        output = window.inspector.output
        qtbot.waitUntil(lambda: scheduler.live_log("slow") is not None, timeout=10000)
        qtbot.waitUntil(lambda: "first line" in output.toPlainText(), timeout=3000)
        assert scheduler.task("slow").state is S.RUNNING  # live, not after the end
        assert "running" in output.toPlainText()
        assert window.inspector.open_log.isEnabled()
        assert window.inspector.open_log.toolTip() == scheduler.live_log("slow")
        sentinel.write_text("")
        qtbot.waitUntil(lambda: scheduler.task("slow").state is S.SUCCEEDED, timeout=10000)
        qtbot.waitUntil(lambda: "done" in output.toPlainText(), timeout=5000)
        assert not window.inspector.tail_timer.isActive()  # stopped following
        assert scheduler.live_log("slow") is None
    finally:
        scheduler.shutdown(wait=True, cancel_running=True)
