"""Loading and checking a workflow file: every problem is collected before giving up.

``load(path)`` reads a file (format in docs/design.md, "Workflow files"), ``loads``
parses text and ``from_dict`` checks a parsed document; each returns a ``Workflow``
(``workflow_model.py``) or raises a ``WorkflowError`` listing every ``Problem``.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tomllib
from datetime import UTC, date, datetime, time
from pathlib import Path

from .actions import Call
from .cron import CronTrigger, zone
from .definitions import TaskDefinition
from .durations import MAX_DURATION, parse_duration
from .envfile import EnvFileError, read_env_file
from .hooks import (
    EVENTS,
    NOTIFY_KEYS,
    TASK_EVENTS,
    TASK_HOOK_KEYS,
    WORKFLOW_HOOK_KEYS,
    HookCommand,
    HookSettings,
)
from .models import RetryPolicy
from .options import Misfire, Mode, Overlap, TriggerRule, values
from .workflow_model import Problem, Workflow, WorkflowError, toml_key

TOP_KEYS = ("workflow", "tasks", "pools")
WORKFLOW_KEYS = (
    "name",
    "workers",
    "executor",
    *WORKFLOW_HOOK_KEYS,
    "notify",
    "timeout",
    "defaults",
    "env_file",
    "secret_env",
)
# [workflow.defaults]: what a task without its own key gets.
DEFAULT_KEYS = ("retry", "timeout", "env", "cwd", "priority", "pool", "jitter")
# Task keys that are no part of its definition: the workflow keeps them.
TASK_SIDE_KEYS = ("env_file", "secret_env", "calendar")
TASK_KEYS = (
    "command",
    "call",
    "args",
    "shell",
    "cwd",
    "env",
    "at",
    "after",
    "every",
    "mode",
    "cron",
    "timezone",
    "deps",
    "priority",
    "retry",
    "timeout",
    "trigger_rule",
    "overlap",
    "misfire",
    "misfire_grace",
    "expected",
    "pos",
    "group",
    "pool",
    "jitter",
    "skip",
)
RETRY_KEYS = ("max_attempts", "base", "factor", "max_delay", "jitter")
TIME_KEYS = ("at", "after", "every", "cron")
CHOICES = {
    "mode": values(Mode),
    "trigger_rule": values(TriggerRule),
    "overlap": values(Overlap),
    "misfire": values(Misfire),
}
RECURRING_ONLY = ("overlap", "misfire", "misfire_grace", "skip", "calendar")
COMMAND_ONLY = ("shell", "cwd", "env")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DASK = re.compile(r"^dask://[^\s:/]+:\d{1,5}$")
# The name prefixes the run's log folder and names its store: no path parts in it.
_BAD_NAME = re.compile(r"[/\\\x00-\x1f\x7f-\x9f]")
MAX_FILE_BYTES = 32 * 1024 * 1024  # 10,000 tasks take about 2 MB
MAX_DEPTH = 100  # arrays and tables inside each other; saving and storing recurse


# ---------------------------------------------------------------------- loading
def load(path) -> Workflow:
    """Read and check a workflow file; ``WorkflowError`` lists every problem.

    Only a regular file of at most ``MAX_FILE_BYTES`` is read: a FIFO would block
    and a device such as /dev/zero would never end.
    """
    path = Path(path)
    try:
        text = _read_text(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problem = Problem(str(path), None, None, f"cannot read: {exc}")
        raise WorkflowError([problem], unreadable=True) from None
    return loads(text, path)


def _read_text(path: Path) -> str:
    # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        limit = MAX_FILE_BYTES // (1024 * 1024)
        if info.st_size > MAX_FILE_BYTES:
            raise ValueError(f"{info.st_size:,} bytes, more than the {limit} MiB limit")
        data = stream.read(MAX_FILE_BYTES + 1)  # it may have grown since fstat
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"more than the {limit} MiB limit")
    return data.decode("utf-8")


def loads(text: str, path=None) -> Workflow:
    """Parse workflow TOML text; ``path`` names the file in errors and anchors ``cwd``."""
    file = str(path) if path is not None else "<workflow>"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkflowError([_syntax_problem(file, text, exc)]) from None
    except RecursionError:  # tomllib recurses once per level
        raise WorkflowError([Problem(file, None, None, _TOO_DEEP)]) from None
    return from_dict(data, path)


def from_dict(data: dict, path=None) -> Workflow:
    """Check an already-parsed TOML document and build the ``Workflow``."""
    file = str(path) if path is not None else "<workflow>"
    deep = _too_deep(data)
    if deep is not None:
        task, key = (deep[1], deep[2]) if len(deep) > 2 and deep[0] == "tasks" else (None, deep[0])
        raise WorkflowError([Problem(file, task, key, _TOO_DEEP)])
    return _Checker(data, Path(path) if path is not None else None).workflow()


def new_task_template(workflow: Workflow) -> TaskDefinition | None:
    """What a task added to ``workflow`` after it was loaded (in the window) starts
    from: its ``[workflow.defaults]`` and workflow env file, applied as to a task of the
    file. Its action is a placeholder command whose ``cwd`` and ``env`` are the
    defaults'; the caller gives the real action and its own keys. None: nothing to
    apply."""
    defaults, workflow_env = workflow.defaults, workflow.file_env.get("", {})
    if not defaults and not workflow_env:
        return None
    checker = _Checker({"pools": dict(workflow.pools or {})}, workflow.path)
    checker.defaults, checker.file_env = dict(defaults), dict(workflow_env)
    definition, _ = checker.task("new", {"command": ["true"]})
    return definition  # None only if the defaults no longer check (never after a load)


_TOO_DEEP = f"nested too deeply: arrays or tables more than {MAX_DEPTH} levels deep"


def _too_deep(data) -> list[str] | None:
    """The keys down to the first value nested more than MAX_DEPTH deep, or None."""
    # Only arrays and tables are walked (and any value past the limit): a path of keys
    # made for every string of a 100,000-task file was a tenth of reading it.
    stack: list[tuple[object, int, tuple[str, ...]]] = [(data, 0, ())]
    while stack:
        value, depth, keys = stack.pop()
        if depth > MAX_DEPTH:
            return list(keys)
        deeper = depth + 1
        if isinstance(value, dict):
            stack.extend(
                (item, deeper, (*keys, str(k)))
                for k, item in value.items()
                if deeper > MAX_DEPTH or isinstance(item, (dict, list))
            )
        elif isinstance(value, list):
            stack.extend(
                (item, deeper, keys)
                for item in value
                if deeper > MAX_DEPTH or isinstance(item, (dict, list))
            )
    return None


def _syntax_problem(file: str, text: str, exc: tomllib.TOMLDecodeError) -> Problem:
    message = str(exc)
    found = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if found:
        line, column = int(found[1]), int(found[2])
    else:  # "(at end of document)"
        found = re.search(r"\(at end of document\)", message)
        lines = text.split("\n")
        line, column = len(lines), len(lines[-1]) + 1
    if found:
        message = message[: found.start()].strip()
    return Problem(file, None, None, f"TOML syntax error: {message}", line, column)


# Other schedulers' names for a key (Airflow, Compose, GitHub Actions, ...), which
# spelling alone does not bring close enough.
_OTHER_NAMES = {
    "dependencies": "deps",
    "depends_on": "deps",
    "depends": "deps",
    "needs": "deps",
    "after_tasks": "deps",
    "requires": "deps",
    "upstream": "deps",
}


def _did_you_mean(word: str, known) -> str:
    other = _OTHER_NAMES.get(word) if isinstance(word, str) else None
    if other is not None and other in known:
        return f" (did you mean {other!r}?)"
    import difflib  # only a file with a mistake needs it

    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _type_name(value) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


class _Checker:
    """Walks a parsed document once, collecting every problem before giving up."""

    def __init__(self, data: dict, path: Path | None):
        self._task_checks: dict | None = None
        self.data = data
        self.path = path
        self.file = str(path) if path is not None else "<workflow>"
        self.base_dir = path.resolve().parent if path is not None else Path.cwd()
        self.problems: list[Problem] = []
        self.positions: dict[str, tuple[float, float]] = {}
        self.task_hooks: dict[str, dict[str, HookCommand]] = {}
        self.task_secrets: dict[str, tuple[str, ...]] = {}
        self.env_files: dict[str, str | None] = {}
        self.defaults: dict = {}
        self.file_env: dict[str, str] = {}
        self.task_file_env: dict[str, dict[str, str]] = {}
        self.calendar_days: dict[str, list] = {}

    def problem(self, task, key, message) -> None:
        self.problems.append(Problem(self.file, task, key, message))

    # -- the document
    def workflow(self) -> Workflow:
        for key in self.data:
            if key not in TOP_KEYS:
                self.problem(None, key, "unknown section" + _did_you_mean(key, TOP_KEYS))
        settings = self.table(None, "workflow", self.data.get("workflow", {}))
        name, workers, executor = self.settings(settings)
        hook_fields = self.workflow_hooks(settings)
        self.pools = self.pool_limits(self.table(None, "pools", self.data.get("pools", {})))
        timeout = None
        if "timeout" in settings:
            timeout = self.duration(None, "workflow.timeout", settings["timeout"], False)
        secrets = self.secret_names(None, "workflow.secret_env", settings.get("secret_env", []))
        file_env = {}
        if "env_file" in settings:
            file_env = self.env_file(None, "workflow.env_file", settings["env_file"]) or {}
        self.defaults = self.check_defaults(settings.get("defaults", {}))
        self.file_env = file_env
        tasks_table = self.table(None, "tasks", self.data.get("tasks", {}))
        if not tasks_table:
            self.problem(None, "tasks", "no tasks: add a [tasks.NAME] table")
        tasks: dict[str, TaskDefinition] = {}
        deps: dict[str, list[str]] = {}
        for tid, table in tasks_table.items():
            if not isinstance(table, dict):
                self.problem(None, f"tasks.{toml_key(tid)}", "must be a table [tasks.NAME]")
                continue
            definition, deps[tid] = self.task(tid, table)
            if definition is not None:  # else its problems are reported below
                tasks[tid] = definition
        self.dependencies(deps)
        if self.problems:
            raise WorkflowError(self.problems)
        task_hooks = {tid: own for tid, own in self.task_hooks.items() if own}
        hooks = HookSettings(**hook_fields, task_commands=task_hooks)
        workflow = Workflow(
            name, workers, executor, tasks, self.path, self.positions, hooks, self.pools
        )
        workflow.timeout = timeout
        workflow.secret_env = tuple(secrets or ())
        workflow.task_secrets = {tid: names for tid, names in self.task_secrets.items() if names}
        workflow.defaults = self.defaults
        workflow.file_env = {tid: env for tid, env in self.task_file_env.items() if env}
        workflow.calendar_days = {tid: days for tid, days in self.calendar_days.items() if days}
        if self.file_env:
            workflow.file_env[""] = self.file_env
        workflow.env_files = {tid: name for tid, name in self.env_files.items() if name is not None}
        if "env_file" in settings:
            workflow.env_files[""] = settings["env_file"]
        return workflow

    def pool_limits(self, table: dict) -> dict[str, int]:
        """``[pools]``: each a name and how many of its tasks may run at once."""
        pools = {}
        for name, limit in table.items():
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                self.problem(
                    None, f"pools.{toml_key(name)}", f"must be an integer >= 1, got {limit!r}"
                )
            else:
                pools[name] = limit
        return pools

    def table(self, task, key, value) -> dict:
        if isinstance(value, dict):
            return value
        self.problem(task, key, f"must be a table, got {_type_name(value)}")
        return {}

    def settings(self, settings: dict):
        default_name = self.path.stem if self.path is not None else "workflow"
        for key in settings:
            if key not in WORKFLOW_KEYS:
                self.problem(
                    None, f"workflow.{key}", "unknown key" + _did_you_mean(key, WORKFLOW_KEYS)
                )
        name = settings.get("name", default_name)
        if not isinstance(name, str) or not name.strip():
            self.problem(None, "workflow.name", "must be a non-empty string")
            name = default_name
        elif _BAD_NAME.search(name) or name in (".", ".."):
            self.problem(
                None,
                "workflow.name",
                "must not contain '/', '\\' or control characters, nor be '.' or '..' "
                f"(it names the run's log folder and store), got {name!r}",
            )
            name = default_name
        workers = settings.get("workers", 4)
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            self.problem(None, "workflow.workers", f"must be an integer >= 1, got {workers!r}")
            workers = 4
        executor = settings.get("executor", "threads")
        if not isinstance(executor, str) or not (
            executor in ("threads", "processes") or _DASK.match(executor)
        ):
            self.problem(
                None,
                "workflow.executor",
                f"must be 'threads', 'processes' or 'dask://HOST:PORT', got {executor!r}",
            )
            executor = "threads"
        elif executor.startswith("dask://") and not 1 <= int(executor.rpartition(":")[2]) <= 65535:
            self.problem(None, "workflow.executor", f"port must be 1 to 65535, got {executor!r}")
            executor = "threads"
        return name, workers, executor

    def workflow_hooks(self, settings: dict) -> dict:
        """The [workflow] hook keys, as HookSettings fields (task hooks come later)."""
        hooks: dict = {"commands": {}}
        for event in EVENTS:
            key = f"on_{event}"
            if key in settings:
                command = self.hook_command(None, f"workflow.{key}", settings[key])
                if command is not None:
                    hooks["commands"][event] = command
        if "hook_timeout" in settings:
            timeout = self.duration(None, "workflow.hook_timeout", settings["hook_timeout"], False)
            if timeout is not None:
                hooks["timeout"] = timeout
        if "notify" in settings:
            hooks.update(self.notify(settings["notify"]))
        return hooks

    def notify(self, value) -> dict:
        where = "workflow.notify"
        table = self.table(None, where, value)
        found: dict = {}
        for key, item in table.items():
            if key not in NOTIFY_KEYS:
                self.problem(
                    None, f"{where}.{key}", "unknown key" + _did_you_mean(key, NOTIFY_KEYS)
                )
            elif key == "desktop":
                if self.boolean(None, f"{where}.desktop", item) is not None:
                    found["desktop"] = item
            elif key == "webhook":
                if not isinstance(item, str) or not re.match(r"^https?://[^\s/]+\S*$", item):
                    self.problem(
                        None,
                        f"{where}.webhook",
                        f"must be an http:// or https:// URL, got {item!r}",
                    )
                else:
                    found["webhook"] = item
            else:  # events
                if isinstance(item, str):
                    item = [item]
                if not isinstance(item, list) or not all(e in EVENTS for e in item):
                    self.problem(
                        None,
                        f"{where}.events",
                        f"must be a list of {', '.join(map(repr, EVENTS))}, got {item!r}",
                    )
                else:
                    found["notify_events"] = tuple(dict.fromkeys(item))
        return found

    def command_string(self, tid, key, value: str) -> str | None:
        """A command given as one string: not blank, no NUL."""
        if not value.strip():
            self.problem(tid, key, "is empty")
            return None
        if "\0" in value:
            self.problem(tid, key, "must not contain a NUL character")
            return None
        return value

    def hook_command(self, tid, key, value) -> HookCommand | None:
        """A hook: a command string (run by /bin/sh) or an argv list."""
        if isinstance(value, str):
            return self.command_string(tid, key, value)
        if isinstance(value, list):
            if not value or not all(isinstance(part, str) for part in value):
                self.problem(tid, key, "must be a non-empty argv list of strings")
                return None
            if not value[0].strip() or any("\0" in part for part in value):
                self.problem(tid, key, "the program (first item) is empty, or a NUL is in it")
                return None
            return tuple(value)
        self.problem(tid, key, f"must be a command string or an argv list, got {_type_name(value)}")
        return None

    # -- defaults, env files and secrets
    def check_defaults(self, value) -> dict:
        """The [workflow.defaults] values that are good, as a task table would hold them."""
        table = self.table(None, "workflow.defaults", value)
        good = {}
        for key, item in table.items():
            where = f"workflow.defaults.{key}"
            if key not in DEFAULT_KEYS:
                self.problem(None, where, "unknown key" + _did_you_mean(key, DEFAULT_KEYS))
                continue
            before = len(self.problems)
            checked = getattr(self, "check_" + key)(None, where, item, table)
            if checked is not None and len(self.problems) == before:
                good[key] = item
        return good

    def secret_names(self, tid, key, value) -> list[str] | None:
        """``secret_env``: names of variables taken from Taskloom's environment."""
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(tid, key, 'must be a list of variable names, like ["API_TOKEN"]')
            return None
        bad = [v for v in value if not _ENV_NAME.match(v)]
        if bad:
            self.problem(tid, key, f"{bad[0]!r} is not a variable name (letters, digits, _)")
            return None
        return list(dict.fromkeys(value))

    def env_file(self, tid, key, value) -> dict[str, str] | None:
        """The variables of an env file (relative to the workflow file's folder)."""
        if not isinstance(value, str) or not value:
            self.problem(tid, key, f'must be a file name like ".env", got {value!r}')
            return None
        path = self.base_dir / value
        try:
            return read_env_file(path)
        except EnvFileError as exc:
            self.problems.append(
                Problem(exc.file, tid, key, f"env file: {exc.message}", exc.line, exc.column)
            )
        except OSError as exc:
            self.problem(tid, key, f"cannot read {str(path)!r}: {exc.strerror or exc}")
        return None

    def calendar(self, tid, value) -> list | None:
        """The days a calendar file skips (relative to the workflow file's folder)."""
        from .calendars import parse_days, read_calendar

        if not isinstance(value, str) or not value:
            self.problem(tid, "calendar", f"must be a file name, got {value!r}")
            return None
        path = self.base_dir / value
        try:
            days = read_calendar(path)
        except OSError as exc:
            self.problem(tid, "calendar", f"cannot read {str(path)!r}: {exc.strerror or exc}")
            return None
        except ValueError as exc:
            self.problems.append(Problem(str(path), None, None, f"calendar: {exc}", 1, 1))
            return None
        for item in days:
            try:
                parse_days([item])
            except ValueError as exc:
                # Where the item is written in the calendar, for file:line:column
                text = path.read_text(encoding="utf-8")
                at = text.find(str(item))
                line = text.count("\n", 0, at) + 1 if at >= 0 else 1
                column = at - text.rfind("\n", 0, at) if at >= 0 else 1
                message = f"calendar: {exc}"
                self.problems.append(Problem(str(path), None, "skip", message, line, column))
                return None
        return days

    def check_skip(self, tid, key, value, table):
        from .calendars import parse_days

        if isinstance(value, (str, date)):
            value = [value]
        if not isinstance(value, list):
            self.problem(tid, key, f"must be a list of dates and ranges, got {_type_name(value)}")
            return None
        try:
            parse_days(value)
        except ValueError as exc:
            self.problem(tid, key, str(exc) + " (a date, or a range like '2026-12-25..2026-12-26')")
            return None
        return value

    # -- one task
    def task(self, tid: str, table: dict) -> tuple[TaskDefinition | None, list[str]]:
        """The task's definition (None if its table has problems) and its deps."""
        before = len(self.problems)
        if not tid.strip():
            self.problem(tid, None, "a task name must not be empty")
        for key in table:
            if key == "on_finish":
                self.problem(tid, key, "is about the whole run: put it in [workflow]")
            elif key not in TASK_KEYS and key not in TASK_HOOK_KEYS and key not in TASK_SIDE_KEYS:
                known = TASK_KEYS + TASK_HOOK_KEYS + TASK_SIDE_KEYS
                self.problem(tid, key, "unknown key" + _did_you_mean(key, known))
        if "secret_env" in table:
            names = self.secret_names(tid, "secret_env", table["secret_env"])
            self.task_secrets[tid] = tuple(names or ())
        own_env: dict[str, str] = {}
        self.env_files[tid] = None
        if "env_file" in table:
            own_env = self.env_file(tid, "env_file", table["env_file"]) or {}
            self.env_files[tid] = table["env_file"]
        self.task_file_env[tid] = own_env
        days: list = []
        if "calendar" in table:
            days = self.calendar(tid, table["calendar"]) or []
            self.calendar_days[tid] = days
        table = expanded(table, self.defaults, self.file_env, own_env, days)
        own = {}
        for event in TASK_EVENTS:
            if f"on_{event}" in table:
                command = self.hook_command(tid, f"on_{event}", table[f"on_{event}"])
                if command is not None:
                    own[event] = command
        self.task_hooks[tid] = own
        checks = self._task_checks
        if checks is None:  # once per file, not per task
            checks = self._task_checks = {key: getattr(self, "check_" + key) for key in TASK_KEYS}
        values = {}
        for key in TASK_KEYS:
            if key in table:
                value = checks[key](tid, key, table[key], table)
                if value is not None:
                    values[key] = value
        self.action_rules(tid, table)
        self.time_rules(tid, table)
        deps = values.get("deps", [])
        if len(self.problems) > before:
            return None, deps
        if "pos" in values:
            self.positions[tid] = values.pop("pos")
        return TaskDefinition.from_table(tid, values, self.base_dir), deps

    def action_rules(self, tid: str, table: dict) -> None:
        has_command, has_call = "command" in table, "call" in table
        if has_command and has_call:
            self.problem(tid, "call", "give either command or call, not both")
        elif not has_command and not has_call:
            self.problem(tid, None, "needs a command (argv list) or a call ('module:function')")
        if has_call:
            for key in COMMAND_ONLY:
                if key in table:
                    self.problem(tid, key, "applies only to a command, not to a call")
        if "args" in table and not has_call:
            self.problem(tid, "args", "applies only to a call")
        command = table.get("command")
        if isinstance(command, str) and command.strip() and table.get("shell") is not True:
            self.problem(
                tid, "command", "a command string needs shell = true (or write an argv list)"
            )
        if isinstance(command, list) and command and table.get("shell") is True:
            self.problem(tid, "shell", "shell = true takes a command string, not an argv list")

    def time_rules(self, tid: str, table: dict) -> None:
        given = [key for key in TIME_KEYS if key in table]
        if len(given) > 1:
            self.problem(
                tid,
                given[1],
                f"only one of at, after, every, cron may be given (found {' and '.join(given)})",
            )
        if "mode" in table and "every" not in table:
            self.problem(tid, "mode", "applies only to a task with every")
        recurring = "every" in table or "cron" in table
        for key in RECURRING_ONLY:
            if key in table and not recurring:
                self.problem(tid, key, "applies only to a recurring task (every or cron)")
        skipping = "every" in table and ("skip" in table or "calendar" in table)
        if "timezone" in table and "cron" not in table and "at" not in table and not skipping:
            self.problem(tid, "timezone", "applies only to cron or at")

    # -- keys: each returns the normalised value, or None after reporting a problem
    def check_command(self, tid, key, value, table):
        if isinstance(value, str):
            return self.command_string(tid, key, value)
        if isinstance(value, list):
            if not value:
                self.problem(tid, key, "is empty: give the program and its arguments")
                return None
            if not all(isinstance(part, str) for part in value):
                self.problem(tid, key, "every item of the argv list must be a string")
                return None
            if not value[0].strip():
                self.problem(tid, key, "the program (first item) is empty")
                return None
            if any("\0" in part for part in value):
                self.problem(tid, key, "an argument must not contain a NUL character")
                return None
            return list(value)
        self.problem(tid, key, f"must be an argv list or a string, got {_type_name(value)}")
        return None

    def check_call(self, tid, key, value, table):
        if not isinstance(value, str):
            self.problem(tid, key, f"must be a string 'module:function', got {_type_name(value)}")
            return None
        try:
            Call(value)
        except ValueError:
            self.problem(tid, key, f"{value!r} is not 'package.module:function'")
            return None
        return value

    def check_args(self, tid, key, value, table):
        if self.table(tid, key, value) is not value:
            return None
        bad = []  # the run store keeps args as JSON: no dates or times
        for name, item in value.items():
            try:
                json.dumps(item)
            except (TypeError, ValueError):
                bad.append(name)
                self.problem(
                    tid,
                    f"{key}.{toml_key(name)}",
                    "cannot hold a date or time (the run store keeps args as JSON): "
                    "write it as a string",
                )
        return None if bad else dict(value)

    def check_shell(self, tid, key, value, table):
        return self.boolean(tid, key, value)

    def check_cwd(self, tid, key, value, table):
        if not isinstance(value, str) or not value:
            self.problem(tid, key, f"must be a non-empty string, got {value!r}")
            return None
        if not (self.base_dir / value).is_dir():
            self.problem(tid, key, f"directory {str(self.base_dir / value)!r} does not exist")
        return value

    def check_env(self, tid, key, value, table):
        if self.table(tid, key, value) is not value:
            return None
        bad = []
        for name, item in value.items():
            where = f"{key}.{toml_key(name)}"
            if not name or "=" in name or "\0" in name:
                self.problem(tid, where, "a variable name must be non-empty, without '=' or NUL")
            elif not isinstance(item, str):
                self.problem(tid, where, f"must be a string, got {_type_name(item)}")
            elif "\0" in item:
                self.problem(tid, where, "must not contain a NUL character")
            else:
                continue
            bad.append(name)
        return None if bad else dict(value)

    def check_at(self, tid, key, value, table):
        moment = value
        if isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                self.problem(
                    tid, key, f"{value!r} is not a date and time like '2026-12-01T02:00:00+01:00'"
                )
                return None
        if not isinstance(moment, datetime):
            what = "a date without a time" if isinstance(value, date) else _type_name(value)
            if isinstance(value, time):
                what = "a time without a date"
            self.problem(tid, key, f"must be a date and time, got {what}")
            return None
        if moment.tzinfo is None:
            tz_name = table.get("timezone")
            if not isinstance(tz_name, str):
                self.problem(
                    tid, key, "needs a UTC offset (like +01:00) or a timezone key to say when"
                )
                return None
            try:
                moment = moment.replace(tzinfo=zone(tz_name))
            except ValueError:
                return None  # check_timezone reports it
        # The engine's timers cannot wait much longer (and it would be a typo).
        if (moment - datetime.now(UTC)).total_seconds() > MAX_DURATION:
            self.problem(tid, key, f"is more than 100 years from now: {moment.isoformat()}")
            return None
        return moment

    def check_after(self, tid, key, value, table):
        return self.duration(tid, key, value, allow_zero=True)

    def check_every(self, tid, key, value, table):
        return self.duration(tid, key, value, allow_zero=False)

    def check_timeout(self, tid, key, value, table):
        return self.duration(tid, key, value, allow_zero=False)

    def check_misfire_grace(self, tid, key, value, table):
        return self.duration(tid, key, value, allow_zero=True)

    def check_expected(self, tid, key, value, table):
        return self.duration(tid, key, value, allow_zero=False)

    def check_mode(self, tid, key, value, table):
        return self.choice(tid, key, value)

    def check_trigger_rule(self, tid, key, value, table):
        return self.choice(tid, key, value)

    def check_overlap(self, tid, key, value, table):
        return self.choice(tid, key, value)

    def check_misfire(self, tid, key, value, table):
        return self.choice(tid, key, value)

    def check_cron(self, tid, key, value, table):
        if not isinstance(value, str):
            self.problem(tid, key, f"must be a cron expression string, got {_type_name(value)}")
            return None
        try:
            CronTrigger(value, "UTC")  # the zone is check_timezone's business
        except ValueError as exc:
            self.problem(tid, key, str(exc))
            return None
        return value

    def check_timezone(self, tid, key, value, table):
        try:
            zone(value)
        except ValueError as exc:
            self.problem(tid, key, str(exc) + _did_you_mean(str(value), _zone_names()))
            return None
        return value

    def check_deps(self, tid, key, value, table):
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(d, str) for d in value):
            self.problem(tid, key, "must be a list of task names")
            return None
        return list(dict.fromkeys(value))  # a repeated name means nothing more

    def check_priority(self, tid, key, value, table):
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(tid, key, f"must be an integer, got {_type_name(value)}")
            return None
        return value

    def check_retry(self, tid, key, value, table):
        if isinstance(value, int) and not isinstance(value, bool):
            value = {"max_attempts": value}  # retry = 3 is short for max_attempts = 3
        if not isinstance(value, dict):
            self.problem(
                tid, key, f"must be a table like {{ max_attempts = 3 }}, got {_type_name(value)}"
            )
            return None
        fields, ok = {}, True
        for name, item in value.items():
            where = f"{key}.{toml_key(name)}"
            if name not in RETRY_KEYS:
                self.problem(tid, where, "unknown key" + _did_you_mean(name, RETRY_KEYS))
                ok = False
            elif name == "max_attempts":
                if isinstance(item, bool) or not isinstance(item, int) or item < 1:
                    self.problem(tid, where, f"must be an integer >= 1, got {item!r}")
                    ok = False
                fields[name] = item
            elif name in ("base", "max_delay"):
                fields[name] = self.duration(tid, where, item, allow_zero=True)
                ok = ok and fields[name] is not None
            else:
                fields[name] = self.number(tid, where, item)
                ok = ok and fields[name] is not None
                if name == "jitter" and fields[name] is not None and fields[name] > 1:
                    self.problem(tid, where, f"is a fraction from 0 to 1, got {item!r}")
                    ok = False
        if not ok:
            return None
        try:
            return RetryPolicy(**fields)
        except ValueError as exc:
            self.problem(tid, key, str(exc))
            return None

    def check_group(self, tid, key, value, table):
        if not isinstance(value, str) or not value.strip():
            self.problem(tid, key, f"must be a non-empty string, got {_type_name(value)}")
            return None
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            self.problem(tid, key, "must not contain control characters")
            return None
        return value

    def check_pool(self, tid, key, value, table):
        pools = self.data.get("pools")
        pools = pools if isinstance(pools, dict) else {}
        if not isinstance(value, str) or value not in pools:
            known = ", ".join(map(repr, pools)) or "none: add a [pools] table"
            self.problem(tid, key, f"must name a pool of [pools] ({known}), got {value!r}")
            return None
        return value

    def check_jitter(self, tid, key, value, table):
        return self.duration(tid, key, value, allow_zero=True)

    def check_pos(self, tid, key, value, table):
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(_is_number(v) and math.isfinite(v) for v in value)
        ):
            self.problem(tid, key, "must be [x, y], two numbers")
            return None
        return (float(value[0]), float(value[1]))

    # -- value helpers
    def boolean(self, tid, key, value):
        if not isinstance(value, bool):
            self.problem(tid, key, f"must be true or false, got {_type_name(value)}")
            return None
        return value

    def number(self, tid, key, value):
        if not _is_number(value) or not math.isfinite(value) or value < 0:
            self.problem(tid, key, f"must be a number >= 0, got {value!r}")
            return None
        return float(value)

    def duration(self, tid, key, value, allow_zero: bool):
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            self.problem(tid, key, str(exc))
            return None
        if seconds < 0 or (seconds == 0 and not allow_zero):
            limit = ">= 0" if allow_zero else "> 0"
            self.problem(tid, key, f"must be {limit}, got {value!r}")
            return None
        return seconds

    def choice(self, tid, key, value):
        options = CHOICES[key]
        if value not in options:
            hint = _did_you_mean(value, options) if isinstance(value, str) else ""
            self.problem(tid, key, f"must be one of {', '.join(options)}, got {value!r}{hint}")
            return None
        return value

    # -- across tasks
    def dependencies(self, tasks: dict[str, list[str]]) -> None:
        for tid, deps in tasks.items():
            for dep in deps:
                if dep not in tasks:
                    self.problem(tid, "deps", f"unknown task {dep!r}" + _did_you_mean(dep, tasks))
        if _acyclic(tasks):  # one linear pass over the dict for the usual case
            return
        # Only a file with a cycle builds a graph (networkx loads for it alone).
        import networkx as nx

        graph: nx.DiGraph[str] = nx.DiGraph()
        graph.add_nodes_from(tasks)
        for tid, deps in tasks.items():
            graph.add_edges_from((dep, tid) for dep in deps if dep in tasks)
        # Search for cycles only where they can be: strongly connected parts and
        # self-loops (find_cycle over the whole graph is slow at 10,000 tasks).
        knotted = set(nx.nodes_with_selfloops(graph))
        for part in nx.strongly_connected_components(graph):
            if len(part) > 1:
                knotted |= part
        graph = graph.subgraph(knotted).copy()
        order = {tid: n for n, tid in enumerate(tasks)}
        for _ in range(graph.number_of_edges()):
            try:
                edges = nx.find_cycle(graph)
            except nx.NetworkXNoCycle:
                break
            cycle = [u for u, _ in edges]
            start = min(range(len(cycle)), key=lambda i: order[cycle[i]])
            cycle = cycle[start:] + cycle[:start]
            path = " -> ".join([*cycle, cycle[0]])
            self.problem(cycle[0], "deps", f"dependency cycle: {path} (each runs before the next)")
            graph.remove_edge(*edges[0])


def _acyclic(tasks: dict[str, list[str]]) -> bool:
    """Whether the dependencies ``tasks`` (id -> ids it needs; unknown ids ignored)
    have no cycle: Kahn's algorithm over the dict, no graph built."""
    needs = {tid: sum(1 for dep in set(deps) if dep in tasks) for tid, deps in tasks.items()}
    needed_by: dict[str, list[str]] = {}
    for tid, deps in tasks.items():
        for dep in set(deps):
            if dep in tasks:
                needed_by.setdefault(dep, []).append(tid)
    ready = [tid for tid, count in needs.items() if count == 0]
    done = 0
    while ready:
        tid = ready.pop()
        done += 1
        for after in needed_by.get(tid, ()):
            needs[after] -= 1
            if needs[after] == 0:
                ready.append(after)
    return done == len(tasks)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _zone_names():
    from zoneinfo import available_timezones

    return sorted(available_timezones())


def expanded(table: dict, defaults: dict, workflow_env: dict, file_env: dict, calendar=()) -> dict:
    """What a task table means with the workflow's defaults and env files: a default
    for each key the task does not give (``cwd`` and ``env`` only for a command; pool
    and jitter once tasks take them), and ``env`` built as the workflow's env file,
    then ``defaults.env``, then the task's env file, then its own ``env``."""
    if not defaults and not workflow_env and not file_env and not calendar:
        return table
    result = dict(table)
    if calendar:  # a calendar's days join the task's own skip list
        own = table.get("skip", [])
        result["skip"] = [*([own] if isinstance(own, str) else own), *calendar]
    command = "call" not in table
    for key, value in defaults.items():
        if key == "env" or key not in TASK_KEYS or key in table:
            continue
        if key == "cwd" and not command:
            continue
        result[key] = value
    if command:
        own = table.get("env")
        env = {**workflow_env, **defaults.get("env", {}), **file_env}
        if isinstance(own, dict):
            env.update(own)
        elif own is not None:
            return result  # not a table: the checker says so
        if env:
            result["env"] = env
    return result
