"""Where the log records of the engine and the command line go: set up once, here.

Every Taskloom module logs to a logger under ``taskloom`` (``taskloom.engine``,
``taskloom.store``, ``taskloom.feed``, ``taskloom.cli``). ``configure(verbosity)``
is called once by the command line, after its arguments are parsed:

- ``-q`` (verbosity -1): no log record reaches the terminal;
- default (0): warnings and errors, one line each, without tracebacks;
- ``-v`` (1): informational records too (the store, the log folder, the executor);
- ``-vv`` (2): debug records, and errors with their tracebacks.

``log_to_file(path)`` (``taskloom run``) also writes every record, tracebacks
included, to a file beside the task logs: 0600, opened without following a
symbolic link, refused (``UnsafeFile``) if another user owns it. At the default
verbosity the terminal then gets none of them: the run's own lines say what
matters (the store failed) and the summary names the folder.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

ROOT = "taskloom"
_OURS = "_taskloom_handler"  # marks the handlers this module added
MAX_LOG_BYTES = 1 << 20  # taskloom.log, then taskloom.log.1: at most 2 MiB per workflow


class _OneLine(logging.Formatter):
    """``taskloom: warning: message``; the traceback only when asked for (-vv)."""

    def __init__(self, tracebacks: bool):
        super().__init__("taskloom: %(levelname)s: %(message)s")
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        record.levelname = record.levelname.lower()
        if self.tracebacks:
            return super().format(record)
        saved = record.exc_info, record.exc_text, record.stack_info
        record.exc_info = record.exc_text = record.stack_info = None
        try:
            text = super().format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = saved
        if saved[0] is not None and saved[0][1] is not None:
            text += f" ({type(saved[0][1]).__name__}: {saved[0][1]})"
        return text


def _level(verbosity: int) -> int:
    return logging.DEBUG if verbosity >= 2 else logging.INFO if verbosity == 1 else logging.WARNING


def configure(verbosity: int = 0) -> None:
    """Send ``taskloom.*`` records to stderr as ``verbosity`` says (see above).
    Calling it again replaces what an earlier call set up."""
    logger = logging.getLogger(ROOT)
    for handler in [h for h in logger.handlers if getattr(h, _OURS, False)]:
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(_level(verbosity))
    logger.propagate = False  # an embedding program's root handlers do not print them twice
    terminal = logging.StreamHandler(sys.stderr)
    terminal.setFormatter(_OneLine(tracebacks=verbosity >= 2))
    # -q: nothing; a level above every record keeps the handler (and the lastResort
    # handler, which would print warnings) out of the way.
    terminal.setLevel(logging.CRITICAL + 1 if verbosity < 0 else _level(verbosity))
    setattr(terminal, _OURS, True)
    logger.addHandler(terminal)
    logger.taskloom_verbosity = verbosity  # type: ignore[attr-defined]


def _private_handler():
    from logging.handlers import RotatingFileHandler

    class PrivateLog(RotatingFileHandler):
        """A log file that is this user's alone (0600, whatever the umask), never
        opened through a symbolic link or when another user owns it (safe_files).
        A record that cannot be written (a full disk, a folder made read-only) is
        dropped: the run says what went wrong in its own one line, and logging's
        "--- Logging error ---" traceback on stderr would bury it."""

        def _open(self):
            from taskloom.engine.store import open_private

            fd = open_private(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            return os.fdopen(fd, "a", encoding=self.encoding or "utf-8", errors=self.errors)

        def handleError(self, record: logging.LogRecord) -> None:
            pass

    return PrivateLog


def check_file(path: Path) -> None:
    """``UnsafeFile`` (an ``OSError``) now, not at the first record, for a log file
    that is a symbolic link or another user's; an own one readable by others is
    made 0600."""
    if os.path.lexists(path):
        from taskloom.engine.store import open_private

        os.close(open_private(path, os.O_WRONLY | os.O_APPEND))


def log_to_file(path: Path) -> None:
    """Also write every record (with tracebacks) to ``path``; at the default
    verbosity the terminal then gets none (see the module's docstring)."""
    logger = logging.getLogger(ROOT)
    verbosity = getattr(logger, "taskloom_verbosity", 0)
    _PrivateLog = _private_handler()
    # Appended run after run: rotated, so that it is bounded like the rest.
    check_file(path)
    handler = _PrivateLog(path, maxBytes=MAX_LOG_BYTES, backupCount=1, delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    setattr(handler, _OURS, True)
    logger.addHandler(handler)
    if logger.level > logging.WARNING or logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)
    if verbosity == 0:
        for terminal in logger.handlers:
            if getattr(terminal, _OURS, False) and not isinstance(terminal, logging.FileHandler):
                terminal.setLevel(logging.CRITICAL + 1)
