"""A stop signal handled just before the window's event loop starts still quits it.

With ``--start`` the first command runs right before ``app.exec()``; a signal sent as
soon as it runs (a service manager, a test) could be handled between the check of
``requested`` and the loop's start, where ``quit()`` does nothing: the window ran on."""

from __future__ import annotations

import signal

import pytest
from PySide6.QtWidgets import QApplication

from taskloom.app import _StopSignals


@pytest.mark.timeout(30)
def test_a_stop_handled_before_the_loop_starts_ends_the_loop(qapp):
    stop = _StopSignals(qapp)
    stop._stop(signal.SIGTERM, None)  # as if handled before exec() ran its loop
    assert stop.requested
    assert QApplication.exec() == 0  # returns at once instead of running for ever
