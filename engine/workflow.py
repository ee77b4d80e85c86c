"""Workflow files: a set of tasks in TOML, checked in full before anything runs.

``load(path)`` reads a file (format in docs/workflow-file.md) into a
``Workflow``; every problem in it is reported at once, as a ``WorkflowError``
whose lines read ``FILE: tasks.NAME.KEY: message``. ``save(workflow, path)``
writes one back atomically, and ``load(save(w)) == w``.
Each ``[tasks.NAME]`` table becomes a ``TaskDefinition`` (definitions.py);
``Workflow.schedule_into(scheduler)`` hands the tasks to an engine.

The work is split by job; this module exports the public names of each:
``workflow_model.py`` (``Workflow``, ``Problem``, ``WorkflowError``),
``workflow_check.py`` (loading and checking) and ``workflow_text.py`` (writing,
with tomlkit, which reading a file does not load).
"""

from __future__ import annotations

from .workflow_check import (
    CHOICES,
    COMMAND_ONLY,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    RECURRING_ONLY,
    RETRY_KEYS,
    TASK_KEYS,
    TIME_KEYS,
    TOP_KEYS,
    WORKFLOW_KEYS,
    from_dict,
    load,
    loads,
    new_task_template,
)
from .workflow_model import Problem, Workflow, WorkflowError, toml_key
from .workflow_text import dumps, save

__all__ = [
    "CHOICES",
    "COMMAND_ONLY",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "RECURRING_ONLY",
    "RETRY_KEYS",
    "TASK_KEYS",
    "TIME_KEYS",
    "TOP_KEYS",
    "WORKFLOW_KEYS",
    "Problem",
    "Workflow",
    "WorkflowError",
    "dumps",
    "from_dict",
    "load",
    "loads",
    "new_task_template",
    "save",
    "toml_key",
]
