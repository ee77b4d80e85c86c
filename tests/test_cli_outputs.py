"""Outputs passed downstream through the real command: a resumed ``taskloom run``
does not run a finished task again, and its outputs still reach the task after it."""

from __future__ import annotations

import json

from tests.test_cli import private_store_dir, taskloom, write

__all__ = ["private_store_dir"]  # autouse: each test its own store folder


def test_outputs_reach_the_downstream_task_in_a_resumed_run(tmp_path):
    count, seen, go = tmp_path / "count", tmp_path / "seen", tmp_path / "go"
    (tmp_path / "extract.sh").write_text(
        f"echo x >> '{count}'\nprintf 'rows=17\\nnote=a b\\n' > \"$TASKLOOM_OUTPUT\"\n"
    )
    (tmp_path / "load.sh").write_text(
        f"test -e '{go}' || sleep 60\n"
        f"echo \"$TASKLOOM_INPUT_EXTRACT_ROWS|$TASKLOOM_INPUT_EXTRACT_NOTE\" > '{seen}'\n"
        f"cat \"$TASKLOOM_INPUTS\" >> '{seen}'\n"
    )
    path = write(
        tmp_path,
        """
        [tasks.extract]
        command = ["sh", "extract.sh"]

        [tasks.load]
        command = ["sh", "load.sh"]
        deps = ["extract"]
        """,
    )
    interrupted = taskloom("run", path, "--for", "1.5s", timeout=30)
    assert interrupted.returncode == 1, interrupted.stdout + interrupted.stderr
    assert "extract          succeeded" in interrupted.stdout
    go.touch()
    resumed = taskloom("run", path, timeout=30)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming the unfinished run" in resumed.stdout
    assert count.read_text() == "x\n"  # extract did not run again
    first, second = seen.read_text().splitlines()
    assert first == "17|a b"
    assert json.loads(second) == {"extract": {"rows": "17", "note": "a b"}}
