"""A broken workflow file opens the window with every problem listed, file:line:column."""

from __future__ import annotations

import sys

import pytest

from taskloom.app import Sessions
from taskloom.engine.workflow import WorkflowError

PY = sys.executable
BROKEN = f"""[workflow]
name = "broken"

[tasks.fetch]
command = ["{PY}", "-c", "pass"]
retry = {{ max_attempts = 0 }}

[tasks.publish]
command = ["{PY}", "-c", "pass"]
deps = ["fetch", "missing"]
trigger_rule = "all_sucess"
"""


def test_a_broken_file_opens_a_window_listing_every_problem_with_its_place(
    qtbot, tmp_path, settings
):
    path = tmp_path / "broken.toml"
    path.write_text(BROKEN, encoding="utf-8")
    sessions = Sessions(settings, data_dir=tmp_path / "data")
    try:
        with pytest.raises(WorkflowError) as raised:
            sessions.open(path)
        window = sessions.current.window
        assert window.isVisible()  # not only stderr
        assert str(path) in window.problems.list.item(0).toolTip()
        rows = [window.problems.list.item(i).text() for i in range(window.problems.list.count())]
        assert len(rows) == len(raised.value.problems) >= 3
        assert any(row.startswith("broken.toml:11:1:") and "all_sucess" in row for row in rows)
        assert any(row.startswith("broken.toml:10:1:") and "missing" in row for row in rows)
        assert window.bridge.tasks == {}  # nothing was started
        assert "3 problems" in window.problems.summary.text()
        # Fixed, then Reload: the workflow opens in a new window.
        path.write_text(
            BROKEN.replace(', "missing"', "")
            .replace("all_sucess", "all_success")
            .replace("max_attempts = 0", "max_attempts = 2"),
            encoding="utf-8",
        )
        window.problems.reload.click()
        assert set(sessions.current.window.bridge.tasks) == {"fetch", "publish"}
    finally:
        sessions.close()


def test_file_open_of_a_broken_file_lists_problems_in_the_open_window(qtbot, tmp_path, settings):
    good = tmp_path / "good.toml"
    good.write_text(
        f'[workflow]\nname = "good"\n\n[tasks.a]\ncommand = ["{PY}", "-c", "pass"]\nafter = "1h"\n',
        encoding="utf-8",
    )
    bad = tmp_path / "bad.toml"
    bad.write_text("[workflow]\nname = 3\n[tasks.a\n", encoding="utf-8")
    sessions = Sessions(settings, data_dir=tmp_path / "data")
    try:
        sessions.open(good)
        window = sessions.current.window
        assert not sessions.open(bad)
        assert sessions.current.window is window  # kept
        row = window.problems.list.item(0).text()
        assert row.startswith("bad.toml:3:") and "TOML syntax error" in row
        assert window.problems_dock.isVisible()
    finally:
        sessions.close()
