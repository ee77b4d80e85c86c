"""Checked by mypy (tests/test_typing.py), never run: both runs implement the whole
run interface (``engine.run_api.RunInterface``)."""

from __future__ import annotations

from taskloom.engine import Scheduler
from taskloom.engine.run_api import RunInterface
from taskloom.engine.watched_run import WatchedRun


def owned(run: Scheduler) -> RunInterface:
    return run


def watched(run: WatchedRun) -> RunInterface:
    return run
