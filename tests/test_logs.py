"""Where the engine's log records go, as -q / -v set it (taskloom/logs.py)."""

from __future__ import annotations

import logging

import pytest

from taskloom import logs


@pytest.fixture(autouse=True)
def restore_logging():
    logger = logging.getLogger("taskloom")
    saved = logger.handlers[:], logger.level, logger.propagate
    yield
    for handler in logger.handlers:
        if handler not in saved[0]:
            handler.close()
    logger.handlers[:], logger.level, logger.propagate = saved


def _emit() -> None:
    engine = logging.getLogger("taskloom.engine")
    engine.debug("a debug line")
    engine.info("an info line")
    try:
        raise OSError("disk full")
    except OSError:
        engine.exception("store write failed")


@pytest.mark.parametrize(
    ("verbosity", "expected"),
    [
        (-1, []),
        (0, ["taskloom: error: store write failed (OSError: disk full)"]),
        (
            1,
            [
                "taskloom: info: an info line",
                "taskloom: error: store write failed (OSError: disk full)",
            ],
        ),
    ],
)
def test_the_terminal_gets_what_the_verbosity_asks_for(capsys, verbosity, expected):
    logs.configure(verbosity)
    _emit()
    assert capsys.readouterr().err.splitlines() == expected


def test_very_verbose_adds_debug_and_tracebacks(capsys):
    logs.configure(2)
    _emit()
    err = capsys.readouterr().err
    assert "taskloom: debug: a debug line" in err
    assert "Traceback (most recent call last)" in err and "OSError: disk full" in err


def test_configuring_twice_replaces_and_a_run_file_takes_the_records(capsys, tmp_path):
    logs.configure(1)
    logs.configure(0)  # not two terminal handlers
    logs.log_to_file(tmp_path / "taskloom.log")
    _emit()
    assert capsys.readouterr().err == ""  # the file has them; the run's own lines say what matters
    text = (tmp_path / "taskloom.log").read_text()
    assert "taskloom.engine ERROR store write failed" in text and "OSError: disk full" in text
    assert "an info line" not in text
