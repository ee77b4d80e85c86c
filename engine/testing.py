"""Hooks for tests of code that runs as a task, outside a scheduler.

The engine runs each attempt's callable with a ``RunContext`` as ``current_run()``;
``run_in_context`` does the same for a test: ``run_in_context(RunContext("job", 1,
log_dir=...), Command([...]))`` runs a command as its attempt would, and the context
then holds what the engine would record (``exit_code``, ``output``, ``log_path``).
Public and stable like the rest of ``taskloom.engine``; only tests need it.
"""

from __future__ import annotations

from ._jobs.context import RunContext, run_in_context

__all__ = ["RunContext", "run_in_context"]
