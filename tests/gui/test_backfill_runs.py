"""A backfill is a run of the workflow's own store: a window on the file lists it in
the Runs view, labelled with its range (a real `taskloom backfill` process, a real
window offscreen)."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import QPoint, Qt

from tests.test_cli import taskloom


@pytest.mark.slow
def test_the_runs_view_lists_a_backfill_run_by_its_range(qtbot, tmp_path, settings):
    from taskloom.app import WorkflowSession
    from taskloom.engine.workflow import load

    source = tmp_path / "nightly.toml"
    source.write_text(
        '[workflow]\nname = "nightly"\n\n'
        f'[tasks.load]\ncommand = ["{sys.executable}", "-c", "pass"]\n'
        'cron = "30 2 * * *"\ntimezone = "Europe/Berlin"\n',
        encoding="utf-8",
    )
    store = tmp_path / "run.db"
    done = taskloom("backfill", source, "--from", "2026-11-01", "--to", "2026-11-02",
                    "--db", store, XDG_DATA_HOME=str(tmp_path / "data"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    session = WorkflowSession(load(source), settings, db_path=store, log_dir=tmp_path / "logs")
    try:
        window = session.window
        # the window opened the workflow's own run, not the backfill's
        assert session.scheduler.store.run == 2
        assert sorted(t.id for t in session.scheduler.tasks()) == ["load"]
        window.resize(1400, 900)
        window.show()
        qtbot.waitExposed(window)
        window.runs_dock.show()
        window.runs_dock.raise_()
        view = window.runs_view
        qtbot.waitUntil(lambda: view.grid is not None and view.grid.runs[:1] == [1], timeout=10_000)
        head = view.horizontalHeaderItem(0)
        assert head.text() == "Run 1 · backfill"
        assert head.toolTip().startswith("run 1 (backfill 2026-11-01 to 2026-11-02): ")
        rows = [view.verticalHeaderItem(r).text() for r in range(view.rowCount())]
        assert "load@2026-11-01T02:30:00+01:00" in rows and "load@2026-11-02T02:30:00+01:00" in rows
        # its header opens it read-only, named as the backfill it was
        header = view.horizontalHeader()
        at = header.sectionViewportPosition(0) + header.sectionSize(0) // 2
        qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(at, 5))
        bar = window.past_run_bar
        qtbot.waitUntil(bar.isVisible, timeout=10_000)
        assert bar.text.startswith("Run 1 of nightly, backfill 2026-11-01 to 2026-11-02 (")
        assert bar.text.endswith("2 succeeded) — read-only")
    finally:
        session.close()
