"""Writing workflow files, with one TOML library (tomlkit, loaded only to write).

``dumps(workflow)`` is a new file's text and ``save(workflow, path)`` writes it
atomically (``load(save(w)) == w``). ``update_text`` writes a workflow back into
the text a person wrote: comments, key order and formatting are kept, and only
what changed is rewritten.

``update_text(text, workflow, new_base)`` takes the file as it was read
and returns it with the workflow's settings, tasks and positions as they are now:
a task whose meaning did not change keeps its table byte for byte (``"1h"`` stays
``"1h"``, ``priority = 0`` stays), a changed key is rewritten in the form
``dumps`` uses, a removed task's table goes, a new task is appended. Text that
nothing changed comes back identical. ``cwd``s are rebased to ``new_base`` (the
folder the file is saved in; the definitions hold absolute folders): a task keeps
running in the folder it ran in.

``locate(text, task, key)`` finds where a task's table or key starts, as
(line, column), for problems that name a task but not a place;
``locate_problems`` gives such problems their place.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from .definitions import TaskDefinition
from .durations import format_duration
from .hooks import HookSettings, as_toml
from .workflow_model import Workflow, toml_key

if TYPE_CHECKING:
    from tomlkit.items import Table

DURATION_KEYS = ("after", "every", "timeout", "misfire_grace", "jitter")
SETTINGS = ("name", "workers", "executor")
SETTING_DEFAULTS = {"workers": 4, "executor": "threads"}


def update_text(text: str, workflow, new_base) -> str:
    """``text`` with ``workflow`` written into it (see the module doc). ``ValueError``
    for a task no file can hold (a Python object)."""
    import tomlkit
    from tomlkit.items import Table

    document = tomlkit.parse(text)
    new_base = Path(new_base)
    _update_settings(document, workflow)
    if "tasks" not in document:
        document.add(tomlkit.nl())
        document["tasks"] = tomlkit.table(is_super_table=True)
    tasks = document["tasks"]
    for tid in [tid for tid in tasks if tid not in workflow.tasks]:
        del tasks[tid]
    for tid, definition in workflow.tasks.items():
        new = definition.to_table(new_base)
        pos = workflow.positions.get(tid)
        if pos is not None:
            new["pos"] = [round(float(pos[0]), 1), round(float(pos[1]), 1)]
        if tid in tasks and isinstance(tasks[tid], Table):
            _update_task(tasks[tid], tid, new, new_base, _expander(workflow, tid))
        else:
            table = tomlkit.table()
            for key, value in _without_defaults(
                tid, new, new_base, _expander(workflow, tid)
            ).items():
                table[key] = _item(key, value)
            tasks[tid] = table
    return tomlkit.dumps(document)


def _without_defaults(tid: str, new: dict, base: Path, expand) -> dict:
    """A new task's table without the keys that ``[workflow.defaults]`` (or the env
    files) already give it the same way: it then follows a later change of the
    defaults, as the file's own tasks do."""
    meaning = _meaning(tid, new, base, expand)
    if meaning is None:
        return new
    kept = dict(new)
    for key in new:
        if key in ("command", "call", "pos"):
            continue
        trial = {k: v for k, v in kept.items() if k != key}
        if _meaning(tid, trial, base, expand) == meaning:
            kept = trial
    return kept


def _update_settings(document, workflow) -> None:
    import tomlkit

    if "workflow" not in document:
        settings = tomlkit.table()
        document.add("workflow", settings)
    settings = document["workflow"]
    for key in SETTINGS:
        value = getattr(workflow, key)
        if settings.get(key, SETTING_DEFAULTS.get(key)) != value:
            settings[key] = value


def _expander(workflow, tid: str):
    """What turns a task's table as written into what it means: the workflow's
    ``[workflow.defaults]`` and env files (``workflow_check.expanded``)."""
    from .workflow_check import expanded

    files = getattr(workflow, "file_env", {})
    workflow_env, own_env = files.get("", {}), files.get(tid, {})
    defaults = getattr(workflow, "defaults", {})
    days = getattr(workflow, "calendar_days", {}).get(tid, ())
    return lambda table: expanded(table, defaults, workflow_env, own_env, days)


def _meaning(tid: str, table: dict, base: Path, expand=None) -> dict | None:
    """What a table says in a file in ``base``, as ``to_table`` writes it; None if it
    says nothing readable (the checker reported it when the file was opened)."""
    plain = {k: v for k, v in table.items() if k != "pos"}
    if expand is not None:
        plain = expand(plain)
    try:
        meaning = TaskDefinition.from_table(tid, plain, base).to_table(base)
    except (ValueError, TypeError, KeyError):
        return None
    if "pos" in table:
        meaning["pos"] = [float(v) for v in table["pos"]]
    return meaning


def _update_task(table: Table, tid: str, new: dict, new_base: Path, expand=None) -> None:
    old = table.unwrap()
    # Read where it is saved: a relative cwd (or none) means a folder there.
    before = _meaning(tid, old, new_base, expand)
    if before == new:
        return  # same meaning: the text stays as written
    for key, value in new.items():
        if before is not None and key in before and before[key] == value:
            continue  # this key still says the same, however it is written
        if key in table:
            table[key] = _item(key, value)
        else:
            _add_key(table, key, _item(key, value))
    for key in [key for key in old if key not in new]:
        # A key the new table leaves out is dropped unless it only states a default
        # (``priority = 0``, ``shell = false``): the task's meaning is the same without it.
        without = {k: v for k, v in old.items() if k != key}
        if before is None or _meaning(tid, without, new_base, expand) != before:
            del table[key]


def _add_key(table: Table, key: str, value) -> None:
    """A new key goes after the table's last key: tomlkit appends it after the blank
    lines and the comment that introduce the next table, which then read as its own."""
    import tomlkit

    last = None
    for found, _value in table.value.body:
        if found is not None:
            last = found
    if last is None:
        table[key] = value
    else:
        table.value._insert_after(last, key, tomlkit.item(value))


def _item(key: str, value):
    if key in DURATION_KEYS:
        return format_duration(value)
    if key == "retry":
        durations = ("base", "max_delay")
        value = {k: format_duration(v) if k in durations else v for k, v in value.items()}
    if isinstance(value, dict):  # inline, so each task stays one table
        import tomlkit

        inline = tomlkit.inline_table()
        inline.update(value)
        return inline
    return value


# ---------------------------------------------------------------------- saving
def dumps(workflow: Workflow, base_dir=None) -> str:
    """The TOML text of a workflow: only keys that differ from their defaults; each
    ``cwd`` relative to ``base_dir`` (default: the workflow's folder) when inside it.

    ``ValueError`` for a task whose action no file can hold (a Python object)."""
    lines = ["[workflow]", f"name = {_literal(workflow.name)}"]
    lines.append(f"workers = {_literal(workflow.workers)}")
    lines.append(f"executor = {_literal(workflow.executor)}")
    hooks = workflow.hooks
    for event, command in hooks.commands.items():
        lines.append(f"on_{event} = {_literal(as_toml(command))}")
    if hooks.timeout != HookSettings.timeout:
        lines.append(f"hook_timeout = {_literal(format_duration(hooks.timeout))}")
    notify: dict = {}
    if hooks.desktop:
        notify["desktop"] = True
    if hooks.webhook is not None:
        notify["webhook"] = hooks.webhook
    if hooks.notify_events != HookSettings.notify_events:
        notify["events"] = list(hooks.notify_events)
    if notify:
        lines.append(f"notify = {_literal(notify)}")
    # The defaults and env files are written into each task (dumps writes meanings).
    if workflow.timeout is not None:
        lines.append(f"timeout = {_literal(format_duration(workflow.timeout))}")
    if workflow.secret_env:
        lines.append(f"secret_env = {_literal(list(workflow.secret_env))}")
    if workflow.pools:
        lines += ["", "[pools]"] + [f"{toml_key(n)} = {v}" for n, v in workflow.pools.items()]
    base = workflow.base_dir if base_dir is None else Path(base_dir)
    for tid, task in workflow.tasks.items():
        lines += ["", f"[tasks.{toml_key(tid)}]"]
        table = task.to_table(base)
        for event, command in hooks.task_commands.get(tid, {}).items():
            table[f"on_{event}"] = as_toml(command)
        if workflow.task_secrets.get(tid):
            table["secret_env"] = list(workflow.task_secrets[tid])
        pos = workflow.positions.get(tid)
        if pos is not None:
            table["pos"] = [float(pos[0]), float(pos[1])]
        for key, value in table.items():
            lines.append(f"{toml_key(key)} = {_render(key, value)}")
    return "\n".join(lines) + "\n"


def _render(key: str, value) -> str:
    if key in ("after", "every", "timeout", "misfire_grace", "expected", "jitter"):
        return _literal(format_duration(value))
    if key == "retry":
        durations = ("base", "max_delay")
        value = {k: format_duration(v) if k in durations else v for k, v in value.items()}
    return _literal(value)


def _literal(value, nesting: int = 0) -> str:
    """One TOML value; tables inline (``{ a = 1 }``) so each task stays one table,
    arrays one item a line (each nesting level indented 4 more)."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = ", ".join(f"{toml_key(str(k))} = {_literal(v)}" for k, v in value.items())
        return "{ " + items + " }"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        inner, outer = "    " * (nesting + 1), "    " * nesting
        items = ",\n".join(inner + _literal(item, nesting + 1) for item in value)
        return f"[\n{items},\n{outer}]"
    # The common values without tomlkit (the same text it writes, ten times faster)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and _PLAIN.fullmatch(value):
        return f'"{value}"'
    import tomlkit

    return tomlkit.item(value).as_string()


_PLAIN = re.compile(r'[^\x00-\x1f\x7f"\\]*')  # a basic string that needs no escape


def save(workflow: Workflow, path=None) -> Path:
    """Write ``workflow`` to ``path`` (default: its own) atomically; returns the path.

    The text is written to a temporary file beside the target and moved over it,
    so a failure at any point leaves the original file as it was.
    """
    target = Path(path) if path is not None else workflow.path
    if target is None:
        raise ValueError("save: no path given and the workflow has none")
    # Fails before the disk is touched if a value has no TOML form. Paths are written
    # relative to the file's new folder: the tasks still run where they did.
    text = dumps(workflow, target.resolve().parent)
    import tempfile

    handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        if target.exists():
            os.chmod(temp, target.stat().st_mode & 0o7777)
        else:
            os.chmod(temp, 0o644)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    workflow.path = target
    return target


_HEADER = re.compile(r"^\s*\[\s*tasks\s*\.\s*(?P<name>\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)\s*\]")


def locate(text: str, task: str | None, key: str | None) -> tuple[int, int] | None:
    """Where ``[tasks.TASK]`` (and ``KEY`` in it) starts, 1-based (line, column); the
    ``[workflow]`` key when ``task`` is None (``key`` "workflow.KEY" or "KEY"), or a
    top-level key or table the file should not have. A task written another way
    (``[tasks]`` with ``a = {...}``, dotted ``tasks.a.command = ...``) is found where
    its name first appears as a key. None when it is not found."""
    lines = text.split("\n")
    if task is None:
        name = key.removeprefix("workflow.") if key else None
        header = next((n for n, line in enumerate(lines) if line.strip() == "[workflow]"), None)
        if key and key.startswith("tasks.") and len(key) > 6:  # a task that is no table
            name = key[6:].strip("\"'")
            return _mentioned(lines, name) or _top_level(lines, "tasks")
        if key and key.startswith("pools.") and _header(lines, "pools") is not None:
            table = _header(lines, "pools")  # a [pools] limit: its key in the table
            assert table is not None
            return _key_in(lines, table, key[6:].strip("\"'")) or (table + 1, 1)
        if key and not key.startswith("workflow."):  # not a [workflow] key: top level
            return _top_level(lines, key.split(".")[0])
        section = name.partition(".")[0] if name else None
        if section in ("notify", "defaults"):  # [workflow.notify], [workflow.defaults]
            assert name is not None
            table = _header(lines, f"workflow.{section}")
            if table is not None:
                sub = name.partition(".")[2].split(".")[0]
                return (_key_in(lines, table, sub) if sub else None) or (table + 1, 1)
            name = section  # written inline in [workflow]: notify = { ... }
        if header is None:
            return None
        return _key_in(lines, header, name) or (header + 1, 1)
    for n, line in enumerate(lines):
        found = _HEADER.match(line)
        if found and found["name"].strip("\"'") == task:
            if key:
                return _key_in(lines, n, key.split(".")[0]) or (n + 1, line.index("[") + 1)
            return n + 1, line.index("[") + 1
    if key:  # a dotted key (b.deps = ...) or an inline table (b = { deps = ... })
        name = key.split(".")[0]
        place = _mentioned(lines, f"{task}.{name}") or _mentioned(lines, task, name)
        if place is not None:
            return place
    return _mentioned(lines, task)


def _top_level(lines: list[str], key: str) -> tuple[int, int] | None:
    """A key or ``[table]`` outside any table, or a table header of that name."""
    quoted = rf"(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})"
    pattern = re.compile(rf"^(\s*)(\[\[?\s*{quoted}\s*[\].]|{quoted}\s*[=.])")
    for n, line in enumerate(lines):
        found = pattern.match(line)
        if found:
            return n + 1, len(found[1]) + 1
    return None


def _header(lines: list[str], name: str) -> int | None:
    """The index of the line ``[NAME]`` (spaces allowed around the parts), or None."""
    pattern = re.compile(
        r"^\s*\[\s*" + r"\s*\.\s*".join(map(re.escape, name.split("."))) + r"\s*\]"
    )
    return next((n for n, line in enumerate(lines) if pattern.match(line)), None)


def _mentioned(lines: list[str], task: str, key: str | None = None) -> tuple[int, int] | None:
    """The first place ``task`` is written as a key (a dotted key, an inline table);
    with ``key``, the place of ``key =`` on such a line."""
    quoted = rf"(\"{re.escape(task)}\"|'{re.escape(task)}'|(?<![\w-]){re.escape(task)}(?![\w-]))"
    pattern = re.compile(rf"{quoted}\s*[=.\]]")
    inner = re.compile(rf"[{{,]\s*({re.escape(key)}|\"{re.escape(key)}\")\s*=") if key else None
    for n, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            continue
        found = pattern.search(line)
        if found and inner is None:
            return n + 1, found.start() + 1
        if found and inner is not None:
            at = inner.search(line, found.end())
            if at:
                return n + 1, at.start(1) + 1
    return None


def locate_problems(problems, text: str | None) -> list:
    """``problems`` (``workflow.Problem``) each with a line and column: its own, else
    where its task or key is written in ``text``, else the file's start (1, 1) for
    what is written nowhere (no ``[tasks]`` at all). ``text`` None: as they are."""
    from dataclasses import replace

    result = []
    for problem in problems:
        if problem.line is None and text is not None:
            found = None
            if problem.task is not None or problem.key:
                found = locate(text, problem.task, problem.key)
            # Not written anywhere (a missing [tasks] table): the file as a whole.
            line, column = found or (1, 1)
            problem = replace(problem, line=line, column=column)
        result.append(problem)
    return result


def _key_in(lines: list[str], header: int, key: str | None) -> tuple[int, int] | None:
    if not key:
        return None
    pattern = re.compile(rf"^(\s*)(\"{re.escape(key)}\"|{re.escape(key)})\s*=")
    for n in range(header + 1, len(lines)):
        if lines[n].lstrip().startswith("["):
            return None
        found = pattern.match(lines[n])
        if found:
            return n + 1, len(found[1]) + 1
    return None


__all__ = ["dumps", "save", "update_text", "locate", "locate_problems"]
