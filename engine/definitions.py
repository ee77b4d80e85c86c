"""The schema of a task: one frozen ``TaskDefinition``, with its conversions beside it.

A definition is everything that says what a task runs and when: its action (a
``Command``, a ``Call`` or any callable), its schedule (``at``, ``after``,
``every`` + ``mode``, ``cron`` + ``timezone``, or none: as soon as its
dependencies allow), dependencies, priority, retries, timeout and the rules
(trigger rule, overlap, misfire). It does not hold where the GUI draws the task:
positions belong to the workflow document (``Workflow.positions``).

Who makes and reads one:
- the workflow file: ``from_table``/``to_table`` convert one ``[tasks.NAME]``
  table (the checker in workflow.py reports problems with file and key first);
- the store: ``to_row``/``from_row`` convert the JSON the tasks table keeps in its
  ``spec`` column (rows written before this module are read too);
- the engine: ``submit(scheduler)`` schedules one, and ``Scheduler.definition(id)``
  gives back the definition of a task it holds (with its current dependencies);
- the GUI: the add-task dialog makes one, edits and undo re-submit one.

Option fields are enums (``options.py``); a string naming a member is accepted
and turned into it, anything else refused with ``InvalidArgument`` naming the
field and the valid values.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields, replace
from datetime import UTC, date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from ._schedule.recurrence import CronRecurrence, IntervalRecurrence
from .actions import Call
from .command import Command
from .durations import parse_duration
from .errors import InvalidArgument
from .models import RetryPolicy
from .options import Misfire, Mode, Overlap, TriggerRule, values

SCHEDULE_KEYS = ("at", "after", "every", "cron")  # at most one is set
RETRY_FIELDS = ("max_attempts", "base", "factor", "max_delay", "jitter")
ROW_SCHEMA = 2  # the "schema" key of rows this module writes; rows without it are older


def as_enum(enum: type[StrEnum], field: str, value) -> StrEnum:
    """``value`` as a member of ``enum``; ``InvalidArgument`` naming ``field`` otherwise."""
    if type(value) is enum:
        return value
    try:
        return enum(value)
    except ValueError:
        pass
    raise InvalidArgument(
        f"{field} must be one of {', '.join(values(enum))}, got {value!r}", field
    ) from None


_ENUM_FIELDS = (
    ("mode", Mode),
    ("trigger_rule", TriggerRule),
    ("overlap", Overlap),
    ("misfire", Misfire),
)


@dataclass(frozen=True, slots=True)
class TaskDefinition:
    """How a task is defined. Durations are float seconds; ``at`` an aware datetime.

    ``id`` "" lets the scheduler name the task when submitted. ``timezone`` is the
    cron expression's zone (None: UTC) and, in a workflow file, the zone a naive
    ``at`` was read in. ``mode`` applies to ``every`` only; ``overlap``, ``misfire``
    and ``misfire_grace`` to recurring tasks only (elsewhere they keep defaults).
    """

    id: str
    action: Any  # a Command, a Call, or any callable (which no file or store can hold)
    at: datetime | None = None
    after: float | None = None
    every: float | None = None
    mode: Mode = Mode.FIXED_RATE
    cron: str | None = None
    timezone: str | None = None
    deps: tuple[str, ...] = ()
    priority: int = 0
    retry: RetryPolicy | None = None
    timeout: float | None = None
    trigger_rule: TriggerRule = TriggerRule.ALL_SUCCESS
    overlap: Overlap = Overlap.SKIP
    misfire: Misfire = Misfire.RUN_ONCE
    misfire_grace: float = 30.0
    # How long a run is expected to take (seconds), for a task with no history yet:
    # only the forecast reads it (taskloom.engine.durations_model); the engine ignores it.
    expected: float | None = None
    # Where the window draws it: the group it collapses into (a display label only;
    # the engine and the store ignore it).
    group: str | None = None
    # Days a recurring task leaves out (calendars.py): merged (first, last) date
    # ranges, read in ``timezone`` (UTC when None): a file's ``skip`` and ``calendar``.
    skip: tuple[tuple[date, date], ...] = ()
    # The shared limit it counts against (a ``[pools]`` name; None: only ``workers``),
    # and the most random delay (seconds) each occurrence waits before it starts.
    pool: str | None = None
    jitter: float | None = None

    def __post_init__(self):
        # Kept cheap: the engine builds one per scheduling call.
        if not (
            type(self.trigger_rule) is TriggerRule
            and type(self.mode) is Mode
            and type(self.overlap) is Overlap
            and type(self.misfire) is Misfire
        ):
            for name, enum in _ENUM_FIELDS:
                object.__setattr__(self, name, as_enum(enum, name, getattr(self, name)))
        if type(self.id) is not str:
            raise InvalidArgument(f"id must be a string, got {self.id!r}", "name")
        deps = self.deps
        if type(deps) is not tuple:
            deps = (deps,) if isinstance(deps, str) else tuple(deps)
            object.__setattr__(self, "deps", deps)
        at = self.at
        if (at is not None) + (self.after is not None) + (self.every is not None) + (
            self.cron is not None
        ) > 1:
            given = [key for key in SCHEDULE_KEYS if getattr(self, key) is not None]
            raise InvalidArgument(
                f"only one of at, after, every, cron may be given (found {' and '.join(given)})",
                given[1],
            )
        if at is not None and (not isinstance(at, datetime) or at.utcoffset() is None):
            raise InvalidArgument(f"at must be an aware datetime, got {at!r}", "at")

    # -- what it says ---------------------------------------------------------------
    @property
    def schedule_kind(self) -> str:
        """ "at", "after", "every", "cron", or "deps" for a task with no time."""
        for key in SCHEDULE_KEYS:
            if getattr(self, key) is not None:
                return key
        return "deps"

    @property
    def recurring(self) -> bool:
        """True for a task with ``every`` or ``cron``."""
        return self.every is not None or self.cron is not None

    def recurrence(self):
        """The engine's recurrence for it (``recurrence.py``), or None for a one-shot."""
        if self.every is not None:
            return IntervalRecurrence(self.every, self.mode, self.skip_days())
        if self.cron is not None:
            from .cron import CronTrigger  # the cron library loads only when used

            tz = self.timezone or "UTC"
            return CronRecurrence(CronTrigger(self.cron, tz), self.cron, tz, self.skip_days())
        return None

    def skip_days(self):
        """Its skipped days as a ``calendars.SkipDays`` (None without any)."""
        if not self.skip:
            return None
        from .calendars import SkipDays

        return SkipDays(self.skip, self.timezone or "UTC")

    # -- the engine -----------------------------------------------------------------
    def submit(self, scheduler) -> str:
        """Schedule it on ``scheduler`` under ``id`` (a generated one if ""); returns
        the task id. The scheduler checks every value; a refusal changes nothing."""
        common = dict(
            name=self.id or None,
            deps=self.deps,
            priority=self.priority,
            retry=self.retry,
            timeout=self.timeout,
            trigger_rule=self.trigger_rule,
        )
        if self.pool is not None:
            common["pool"] = self.pool
        if self.jitter is not None:
            common["jitter"] = self.jitter
        recurring = dict(
            overlap=self.overlap, misfire=self.misfire, misfire_grace=self.misfire_grace
        )
        kind = self.schedule_kind
        if kind == "at":
            return scheduler.schedule(self.action, run_at=self.at, **common)
        if kind == "after":
            return scheduler.schedule_after(self.action, self.after, **common)
        if self.skip:
            recurring["skip"] = self.skip_days()
        if kind == "every":
            return scheduler.schedule_every(
                self.action, self.every, mode=self.mode, **recurring, **common
            )
        if kind == "cron":
            return scheduler.schedule_cron(
                self.action, self.cron, tz=self.timezone, **recurring, **common
            )
        return scheduler.add(self.action, **common)

    def fingerprint(self, base_dir=None) -> str:
        """A digest of everything that decides what the task runs and when (not its
        id). A resumed run compares the file's with the stored ones to find tasks
        whose definition changed. ``base_dir`` stands in for the cwd of an action
        without one. Equal to the digest earlier versions kept for the same table."""
        action = self.action
        command = call = None
        args: dict = {}
        shell, env, cwd = False, {}, action.cwd if isinstance(action, Command) else None
        if isinstance(action, Command):
            command, shell, env = action.argv, action.shell, action.env
        elif isinstance(action, Call):
            call, args = action.ref, action.kwargs
        else:
            call = repr(action)
        if cwd is None and base_dir is not None:
            cwd = str(base_dir)
        # ``expected`` only informs the forecast, and the group only places the task in
        # the window: changing either must not redefine the task (nor id and action).
        data = {name: getattr(self, name) for name in _FINGERPRINTED}
        if not self.skip:  # the digest of a task without skipped days is as it was
            del data["skip"]
        else:
            from .calendars import ranges_as_text

            data["skip"] = ranges_as_text(self.skip)
        for key in ("pool", "jitter"):  # newer keys: a task without them keeps its digest
            if data[key] is None:
                del data[key]
        data.update(
            command=command,
            call=call,
            args=args,
            shell=shell,
            cwd=cwd,
            env=env,
            deps=list(self.deps),
        )
        text = json.dumps(data, sort_keys=True, default=repr)
        import hashlib  # only a run's store keeps fingerprints: list and validate need none

        return hashlib.sha256(text.encode()).hexdigest()[:16]

    # -- the workflow file ----------------------------------------------------------
    @classmethod
    def from_table(cls, name: str, table: dict, base_dir) -> TaskDefinition:
        """The definition of one ``[tasks.NAME]`` table: ``cwd`` relative to
        ``base_dir`` (the file's folder), durations in seconds (numbers or strings
        like "90s"), ``retry`` a table, a count or a ``RetryPolicy``. Checks no more
        than it must: ``workflow.load`` checks every key first, with file and key."""

        def seconds(key):
            value = table.get(key)
            return None if value is None else parse_duration(value)

        action: Call | Command
        if "call" in table:
            action = Call(table["call"], table.get("args") or {})
        elif "command" in table:
            cwd = table.get("cwd")
            action = Command(
                table["command"],
                shell=table.get("shell", False),
                cwd=str(Path(base_dir) / cwd) if cwd else str(base_dir),
                env=table.get("env") or {},
            )
        else:
            raise InvalidArgument(f"task {name!r} needs a command or a call", "target")
        at = table.get("at")
        if isinstance(at, str):
            at = datetime.fromisoformat(at)
        misfire_grace = seconds("misfire_grace")
        return cls(
            name,
            action,
            at=at,
            after=seconds("after"),
            every=seconds("every"),
            mode=table.get("mode", Mode.FIXED_RATE),
            cron=table.get("cron"),
            timezone=table.get("timezone"),
            deps=tuple(dict.fromkeys(table.get("deps", ()))),
            priority=table.get("priority", 0),
            retry=_retry(table.get("retry")),
            timeout=seconds("timeout"),
            trigger_rule=table.get("trigger_rule", TriggerRule.ALL_SUCCESS),
            overlap=table.get("overlap", Overlap.SKIP),
            misfire=table.get("misfire", Misfire.RUN_ONCE),
            misfire_grace=30.0 if misfire_grace is None else misfire_grace,
            expected=seconds("expected"),
            group=table.get("group"),
            skip=_skip(table.get("skip")),
            pool=table.get("pool"),
            jitter=seconds("jitter"),
        )

    def to_table(self, base_dir) -> dict:
        """The ``[tasks.NAME]`` table: only keys that differ from their defaults, in
        the order files list them; ``cwd`` relative to ``base_dir`` when it was joined
        to it, durations in seconds. ``ValueError`` for an action no file can hold."""
        action = self.action
        table: dict = {}
        if isinstance(action, Call):
            table["call"] = action.ref
            if action.kwargs:
                table["args"] = dict(action.kwargs)
        elif isinstance(action, Command):
            table["command"] = action.argv if isinstance(action.argv, str) else list(action.argv)
            if action.shell:
                table["shell"] = True
            cwd = _relative(action.cwd, base_dir)
            if cwd is not None:
                table["cwd"] = cwd
            if action.env:
                table["env"] = dict(action.env)
        else:
            raise ValueError(
                f"{self.id} runs a Python object ({action!r}), which a workflow file cannot hold"
            )
        kind = self.schedule_kind
        if kind != "deps":
            table[kind] = getattr(self, kind)
        if kind == "every" and self.mode != Mode.FIXED_RATE:
            table["mode"] = self.mode.value
        if self.timezone is not None and (kind in ("cron", "at") or self.skip):
            table["timezone"] = self.timezone
        if self.deps:
            table["deps"] = list(self.deps)
        if self.priority:
            table["priority"] = self.priority
        if self.retry is not None:
            table["retry"] = _retry_table(self.retry)
        if self.timeout is not None:
            table["timeout"] = self.timeout
        if self.trigger_rule != TriggerRule.ALL_SUCCESS:
            table["trigger_rule"] = self.trigger_rule.value
        if self.recurring:
            if self.overlap != Overlap.SKIP:
                table["overlap"] = self.overlap.value
            if self.misfire != Misfire.RUN_ONCE:
                table["misfire"] = self.misfire.value
            if self.misfire_grace != 30.0:
                table["misfire_grace"] = self.misfire_grace
        if self.expected is not None:
            table["expected"] = self.expected
        if self.group is not None:
            table["group"] = self.group
        if self.skip and self.recurring:
            from .calendars import ranges_as_text

            table["skip"] = ranges_as_text(self.skip)
        if self.pool is not None:
            table["pool"] = self.pool
        if self.jitter is not None:
            table["jitter"] = self.jitter
        return table

    # -- the store ------------------------------------------------------------------
    def to_row(self) -> dict:
        """What the store's ``spec`` column keeps (as JSON): the keys rows have always
        had, so older readers still read it, plus ``schema`` and ``at`` (ISO text),
        ``after`` and ``timezone`` as given. ``TypeError`` for an action that cannot
        run again after a restart."""
        row = _row(
            self.action, self.at, self.after, self.every, self.mode, self.cron, self.timezone,
            self.deps, self.priority, self.retry, self.timeout, self.trigger_rule, self.overlap,
            self.misfire, self.misfire_grace, self.pool, self.jitter,
        )  # fmt: skip
        if self.skip and self.recurring:
            from .calendars import ranges_as_text

            row["skip"] = ranges_as_text(self.skip)
        return row

    @classmethod
    def from_row(cls, task_id: str, row: dict) -> TaskDefinition:
        """The definition a stored ``spec`` holds. A one-shot time without an ``at``
        key (given on the scheduler clock) is its ``run_at_wall``, in UTC. A row from
        before ``ROW_SCHEMA`` knew no ``after`` (its time reads as ``at``) and kept a
        cron task's zone as ``tz``, "UTC" when none was given."""
        new = row.get("schema", 1) >= ROW_SCHEMA
        at = row.get("at")
        if at is not None:
            at = datetime.fromisoformat(at)
        elif row.get("run_at_wall") is not None and "after" not in row and "every" not in row:
            # a time given on the scheduler clock (or an old row): its wall time, in UTC
            at = datetime.fromtimestamp(row["run_at_wall"], UTC)
        retry = row.get("retry")
        return cls(
            task_id,
            action_from_row(row["action"]),
            at=at,
            after=row.get("after"),
            every=row.get("every"),
            mode=row.get("mode", Mode.FIXED_RATE),
            cron=row.get("cron"),
            timezone=row.get("timezone") if new else row.get("tz"),
            deps=tuple(row["deps"]),
            priority=row["priority"],
            retry=None if retry is None else RetryPolicy(**retry),
            timeout=row["timeout"],
            trigger_rule=row["trigger_rule"],
            overlap=row.get("overlap", Overlap.SKIP),
            misfire=row.get("misfire", Misfire.RUN_ONCE),
            misfire_grace=row.get("misfire_grace", 30.0),
            skip=_skip(row.get("skip")),
            pool=row.get("pool"),
            jitter=row.get("jitter"),
        )

    def with_deps(self, deps, task_id: str | None = None) -> TaskDefinition:
        """A copy with these dependencies (and id, if given)."""
        deps = tuple(deps)
        if deps == self.deps and (task_id is None or task_id == self.id):
            return self
        return replace(self, deps=deps, id=self.id if task_id is None else task_id)


# ---------------------------------------------------------------------- the parts
def _row(
    action, at, after, every, mode, cron, timezone, deps, priority, retry, timeout,
    trigger_rule, overlap, misfire, misfire_grace, pool=None, jitter=None,
) -> dict:  # fmt: skip
    row = {
        "action": action_row(action),
        "deps": list(deps),
        "priority": priority,
        "retry": None if retry is None else _retry_row(retry),
        "timeout": timeout,
        "trigger_rule": trigger_rule.value,
        "schema": ROW_SCHEMA,
    }
    if every is not None:
        row["every"] = every
        row["mode"] = mode.value
    elif cron is not None:
        row["cron"] = cron
        row["tz"] = timezone or "UTC"
    elif at is not None:
        row["at"] = at.isoformat()
    elif after is not None:
        row["after"] = after
    if timezone is not None:
        row["timezone"] = timezone
    if every is not None or cron is not None:
        row["overlap"] = overlap.value
        row["misfire"] = misfire.value
        row["misfire_grace"] = misfire_grace
    if pool is not None:
        row["pool"] = pool
    if jitter is not None:
        row["jitter"] = jitter
    return row


def row_of_call(
    fn, at, after, deps, priority, retry, timeout, trigger_rule, recurrence, options
) -> dict:
    """``defined_by_call(...).to_row()`` without building the definition (the store
    writes one per scheduling call): ``at`` an aware datetime as given, or None."""
    if recurrence is None:
        return _row(
            fn, at, after, None, None, None, None, deps, priority, retry, timeout, trigger_rule,
            None, None, None, options.get("pool"), options.get("jitter"),
        )  # fmt: skip
    every = mode = cron = None
    if isinstance(recurrence, IntervalRecurrence):
        every, mode = recurrence.interval, recurrence.mode
    else:
        cron = recurrence.expr
    row = _row(
        fn, None, None, every, mode, cron, options.get("timezone"), deps, priority, retry,
        timeout, trigger_rule, options["overlap"], options["misfire"], options["misfire_grace"],
        options.get("pool"), options.get("jitter"),
    )  # fmt: skip
    if recurrence.skip is not None:
        from .calendars import ranges_as_text

        row["skip"] = ranges_as_text(recurrence.skip.ranges)
    return row


def action_row(action) -> dict:
    """An action as the store keeps it; ``TypeError`` for one it cannot run again."""
    if isinstance(action, Call):
        return {"call": action.ref, "args": action.kwargs}
    if isinstance(action, Command):
        return {"command": action.argv, "shell": action.shell, "cwd": action.cwd, "env": action.env}
    raise TypeError(
        f"{action!r} cannot be stored: with a store, a task must be a 'module:function' "
        "reference or a Command, so that it can run again after a restart"
    )


def action_from_row(row: dict):
    if "call" in row:
        return Call(row["call"], row.get("args") or {})
    return Command(row["command"], shell=row["shell"], cwd=row["cwd"], env=row["env"])


def _retry_row(policy: RetryPolicy) -> dict:
    return {name: getattr(policy, name) for name in RETRY_FIELDS}


def _retry_table(policy: RetryPolicy) -> dict:
    """The fields that differ from ``RetryPolicy()`` (``retry = {}`` is the default one)."""
    default = RetryPolicy()
    return {
        name: getattr(policy, name)
        for name in RETRY_FIELDS
        if getattr(policy, name) != getattr(default, name)
    }


# The fields a fingerprint takes as they are (TaskDefinition.fingerprint), named once.
_FINGERPRINTED = tuple(
    f.name for f in fields(TaskDefinition) if f.name not in ("id", "action", "expected", "group")
)


def _retry(value) -> RetryPolicy | None:
    """A retry key as a file may write it: a table, a count, or already a policy."""
    if value is None or isinstance(value, RetryPolicy):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return RetryPolicy(max_attempts=value)
    data = dict(value)
    for name in ("base", "max_delay"):
        if name in data:
            data[name] = parse_duration(data[name])
    return RetryPolicy(**data)


def _skip(value) -> tuple:
    """Skipped days as a file or a row gives them (strings, dates or ranges)."""
    if not value:
        return ()
    from .calendars import parse_days, ranges_as_text

    return parse_days(ranges_as_text(value))


def _relative(cwd: str | None, base_dir) -> str | None:
    """``cwd`` as a file writes it: None for the file's folder; relative when it is
    a path joined to that folder (as ``from_table`` joins one: "sub", "../shared"),
    else as it is (an absolute path, or a folder given elsewhere)."""
    if cwd is None:
        return None
    base = str(base_dir)
    if os.path.normpath(cwd) == os.path.normpath(base):
        return None
    if cwd.startswith(base.rstrip(os.sep) + os.sep):
        return os.path.relpath(cwd, base)
    return cwd


def defined_by_call(
    name: str, fn, at, after, deps, priority, retry, timeout, trigger_rule, recurrence, options
) -> TaskDefinition:
    """The definition a scheduling call made, from ``Scheduler._create``'s checked
    arguments: ``at`` an aware datetime (or None), ``after`` the delay given to
    ``schedule_after``, ``recurrence`` and ``options`` as ``_create`` takes them
    (``options["timezone"]``: a cron task's zone as given, None for UTC)."""
    every = mode = cron = None
    if isinstance(recurrence, IntervalRecurrence):
        every, mode = recurrence.interval, recurrence.mode
    elif isinstance(recurrence, CronRecurrence):
        cron = recurrence.expr
    pool, jitter = options.get("pool"), options.get("jitter")
    if recurrence is None:
        return TaskDefinition(
            name, fn, at, after, None, Mode.FIXED_RATE, None, None, tuple(deps), priority, retry,
            timeout, trigger_rule, pool=pool, jitter=jitter,
        )  # fmt: skip
    skip = () if recurrence.skip is None else recurrence.skip.ranges
    return TaskDefinition(
        name, fn, None, None, every, mode or Mode.FIXED_RATE, cron, options.get("timezone"),
        tuple(deps), priority, retry, timeout, trigger_rule, options["overlap"],
        options["misfire"], options["misfire_grace"], pool=pool, jitter=jitter, skip=skip,
    )  # fmt: skip


def definition_of_task(task, at: datetime | None) -> TaskDefinition:
    """The definition of an engine ``Task`` whose fields say it all (see
    ``Scheduler._create``): a one-shot or interval task; ``at`` its one-shot time
    as an aware datetime, or None."""
    options = {
        "overlap": task.overlap,
        "misfire": task.misfire,
        "misfire_grace": task.misfire_grace,
    }
    if task.pool is not None:
        options["pool"] = task.pool
    if task.jitter is not None:
        options["jitter"] = task.jitter
    return defined_by_call(
        task.id, task.fn, at, None, task.deps, task.priority, task.retry, task.timeout,
        task.trigger_rule, task.recurrence, options,
    )  # fmt: skip
