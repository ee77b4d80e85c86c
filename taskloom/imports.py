"""``call = "module:function"`` finds modules that sit next to the workflow file.

A workflow's folder goes on the import path of whatever runs its calls:
``use_workflow_folder(workflow, executor)`` is called by ``taskloom run`` and by
the window before the run opens.

- threads: this process's ``sys.path``;
- processes: the pool's workers are spawned with a copy of this process's
  ``sys.path`` (``multiprocessing``'s spawn passes it), a restarted pool too;
- Dask: a worker plugin adds the folder on every worker, present and future.
  That helps only workers that see the same file system (a local cluster, a
  shared home); elsewhere the module must be installed on the workers.

The folder is appended, not put first: a file in it named like a module Taskloom
or the standard library uses (``json.py``) must not replace that module in the
engine's own process.

``call_problems(workflow)`` is ``validate``'s check that each ``call`` imports and
names a callable, with the file, line and column of its ``call`` key.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path


def add_to_path(folder: str) -> None:
    if folder not in sys.path:
        sys.path.append(folder)


def folder_plugin(folder: str):
    """A Dask worker plugin that puts ``folder`` on each worker's ``sys.path`` (Dask
    refuses duck-typed plugins, and ``distributed`` is optional: made on demand)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class WorkflowFolder(WorkerPlugin):
        idempotent = True  # registering the same folder again changes nothing
        name = f"taskloom-workflow-folder-{folder}"

        def setup(self, worker=None) -> None:
            import sys

            if folder not in sys.path:
                sys.path.append(folder)

    return WorkflowFolder()


def use_workflow_folder(workflow, executor=None) -> str:
    """Put the workflow's folder on the import path of this process and of
    ``executor``'s workers (see the module's docstring). Returns the folder."""
    folder = str(workflow.base_dir)
    add_to_path(folder)
    client = getattr(executor, "client", None)
    if client is not None and any(_is_call(task) for task in workflow.tasks.values()):
        try:
            client.register_plugin(folder_plugin(folder))
        except Exception as exc:  # an old cluster: the calls may still import
            import logging

            logging.getLogger("taskloom.cli").warning(
                "could not add %s to the Dask workers' import path: %s", folder, exc
            )
    return folder


def _is_call(task) -> bool:
    from taskloom.engine import Call

    return isinstance(task.action, Call)


def call_problems(workflow, text: str | None = None) -> list:
    """A ``Problem`` for each ``call`` that does not import or is not callable.
    Importing runs the module's top-level code, as running the task would."""
    from taskloom.engine.workflow import Problem

    if workflow.path is not None:
        add_to_path(str(workflow.base_dir))
    if text is None and workflow.path is not None:
        text = Path(workflow.path).read_text(encoding="utf-8")
    problems = []
    for tid, task in workflow.tasks.items():
        if not _is_call(task):
            continue
        try:
            # What a module prints on import must not mix with validate's answer (--json).
            with contextlib.redirect_stdout(sys.stderr):
                task.action.resolve()
        except Exception as exc:  # whatever the module raises on import
            message = f"call {task.action.ref!r}: {_why(exc)}"
            line, column = _call_position(text or "", tid)
            problems.append(
                Problem(str(workflow.path), tid, "call", message, line, column)
                if line is not None
                else Problem(str(workflow.path), tid, "call", message)
            )
    return problems


def _why(exc: BaseException) -> str:
    text = str(exc)
    ref, sep, rest = text.partition(": ")
    if sep and isinstance(exc, ImportError) and ":" in ref:
        text = rest  # Call.resolve starts with the reference, which we say already
    return text if isinstance(exc, ImportError | TypeError) else f"{type(exc).__name__}: {text}"


def _call_position(text: str, task_id: str) -> tuple[int | None, int | None]:
    """Line and column (1-based) of the value of ``call`` in ``[tasks.<task_id>]``;
    (None, None) when the file writes it some other way (an inline table)."""
    headers = {f"tasks.{task_id}", f'tasks."{task_id}"', f"tasks.'{task_id}'"}
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$", line)
        if header:
            inside = re.sub(r"\s*\.\s*", ".", header[1]) in headers
            continue
        found = re.match(r"(\s*call\s*=\s*)\S", line) if inside else None
        if found:
            return number, len(found[1]) + 1
    return None, None
