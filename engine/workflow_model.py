"""The workflow model: a parsed file (``Workflow``) and what can be wrong with one
(``Problem``, ``WorkflowError``). Loading and checking live in ``workflow_check.py``,
writing in ``workflow_text.py``; ``engine.workflow`` exports all three.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .definitions import TaskDefinition
from .hooks import HookSettings

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


# ---------------------------------------------------------------------- problems
@dataclass(frozen=True)
class Problem:
    """One thing wrong with a workflow file; ``task``/``key`` are None when not about one."""

    file: str
    task: str | None
    key: str | None
    message: str
    line: int | None = None
    column: int | None = None

    @property
    def where(self) -> str:
        """``tasks.NAME.KEY``, ``workflow.KEY``, ``KEY`` or "" (the whole file)."""
        parts = []
        if self.task is not None:
            parts += ["tasks", toml_key(self.task)]
        if self.key:
            parts.append(self.key)
        return ".".join(parts)

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}:{self.column}: {self.message}"
        if self.where:
            return f"{self.file}: {self.where}: {self.message}"
        return f"{self.file}: {self.message}"


class WorkflowError(ValueError):
    """A workflow file with problems; ``problems`` lists every one found.

    ``unreadable`` is true when the file could not be read at all (missing, not a
    regular file, too large), as opposed to a file read with problems in it.
    """

    def __init__(self, problems, *, unreadable: bool = False):
        self.problems = list(problems)
        self.unreadable = unreadable
        super().__init__("\n".join(str(problem) for problem in self.problems))


def toml_key(key: str) -> str:
    """A key as TOML writes it: bare when it can be, else quoted."""
    if _BARE_KEY.match(key):
        return key
    import tomlkit  # for writing only: reading a good file does not load it

    return tomlkit.key(key).as_string()


# ---------------------------------------------------------------------- the model
@dataclass
class Workflow:
    """A parsed workflow file: its settings, a ``TaskDefinition`` per ``[tasks.NAME]``
    table (``definitions.py``), ``positions``: where the GUI drew each task, and
    ``hooks``: its hook commands and notification sinks (``hooks.py``)."""

    name: str
    workers: int = 4
    executor: str = "threads"
    tasks: dict[str, TaskDefinition] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)
    positions: dict[str, tuple[float, float]] = field(default_factory=dict)
    # What runs when tasks fail, retry or succeed and when the run ends (engine/hooks.py)
    hooks: HookSettings = field(default_factory=HookSettings)
    # Shared limits ([pools] name = N): at most N runs of tasks with pool = "name" at once
    pools: dict[str, int] = field(default_factory=dict)
    # [workflow] timeout: past it the run's unfinished tasks are cancelled (deadline.py)
    timeout: float | None = None
    # Variables taken from Taskloom's environment when the run starts, never stored:
    # the workflow's (secret_env) and each task's own ({task id: names}).
    secret_env: tuple[str, ...] = ()
    task_secrets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # As the file gives them; the tasks hold their meaning already (a default under
    # each task's own keys, the env files' variables in each command's env).
    defaults: dict = field(default_factory=dict, compare=False)
    env_files: dict[str, str] = field(default_factory=dict, compare=False)  # "" = workflow's
    file_env: dict[str, dict[str, str]] = field(default_factory=dict, compare=False, repr=False)
    calendar_days: dict[str, list] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        self.positions = {tid: (float(x), float(y)) for tid, (x, y) in self.positions.items()}

    @property
    def base_dir(self) -> Path:
        """Where relative ``cwd``s start: the file's folder."""
        return self.path.resolve().parent if self.path else Path.cwd()

    def fingerprints(self) -> dict[str, str]:
        """{task id: definition digest} (see ``TaskDefinition.fingerprint``)."""
        base = self.base_dir
        return {tid: task.fingerprint(base) for tid, task in self.tasks.items()}

    def secret_names(self) -> tuple[str, ...]:
        """Every variable named by a ``secret_env`` (the workflow's and its tasks')."""
        names = list(self.secret_env)
        for own in self.task_secrets.values():
            names += own
        return tuple(dict.fromkeys(names))

    def set_position(self, task_id: str, x: float, y: float) -> None:
        self.positions[task_id] = (float(x), float(y))

    def order(self) -> list[str]:
        """Task ids, each after its dependencies, otherwise in file order."""
        import heapq

        index = {tid: n for n, tid in enumerate(self.tasks)}
        get = index.get
        # Every task after what it depends on (as files are mostly written): file order.
        if all(get(dep, -1) < n for n, task in enumerate(self.tasks.values()) for dep in task.deps):
            return list(self.tasks)
        waiting = {tid: {d for d in task.deps if d in index} for tid, task in self.tasks.items()}
        dependents: dict[str, list[str]] = {tid: [] for tid in self.tasks}
        for tid, deps in waiting.items():
            for dep in deps:
                dependents[dep].append(tid)
        ready = [index[tid] for tid, deps in waiting.items() if not deps]
        heapq.heapify(ready)
        placed: list[str] = []
        names = list(self.tasks)
        while len(placed) < len(names):
            if not ready:  # a cycle (load() refuses those): place the rest in file order
                placed += [tid for tid in names if tid not in set(placed)]
                break
            tid = names[heapq.heappop(ready)]
            placed.append(tid)
            for child in dependents[tid]:
                waiting[child].discard(tid)
                if not waiting[child]:
                    heapq.heappush(ready, index[child])
        return placed

    def schedule_into(self, scheduler, skip=()) -> dict[str, str]:
        """Schedule every task (but those in ``skip``, already in the engine) on
        ``scheduler``; returns {table key: engine task id}."""
        ids: dict[str, str] = {tid: tid for tid in skip}
        for tid in self.order():
            if tid in skip:
                continue
            task = self.tasks[tid]
            deps = tuple(ids.get(dep, dep) for dep in task.deps)
            ids[tid] = task.with_deps(deps, tid).submit(scheduler)
        return ids
