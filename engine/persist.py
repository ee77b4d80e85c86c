"""Task definitions as plain data, so a store can rebuild them after a restart.

Only actions that can be named survive a restart: a ``Call`` ("module:function"
with keyword arguments) or a ``Command``. A lambda or a closure cannot be
stored; with a store configured, scheduling one is refused with a clear error.
"""

from __future__ import annotations

from ._schedule.recurrence import CronRecurrence, IntervalRecurrence
from .actions import Call
from .models import RetryPolicy
from .options import Mode


def action_spec(fn) -> dict:
    if isinstance(fn, Call):
        return {"call": fn.ref, "args": fn.kwargs}
    from .command import Command

    if isinstance(fn, Command):
        return {"command": fn.argv, "shell": fn.shell, "cwd": fn.cwd, "env": fn.env}
    raise TypeError(
        f"{fn!r} cannot be stored: with a store, a task must be a 'module:function' "
        "reference or a Command, so that it can run again after a restart"
    )


def action_from_spec(spec: dict):
    if "call" in spec:
        return Call(spec["call"], spec.get("args") or {})
    from .command import Command

    return Command(spec["command"], shell=spec["shell"], cwd=spec["cwd"], env=spec["env"])


def task_spec(fn, *, deps, priority, retry, timeout, trigger_rule, recurrence, options) -> dict:
    spec = {
        "action": action_spec(fn),
        "deps": list(deps),
        "priority": priority,
        "retry": None if retry is None else retry_spec(retry),
        "timeout": timeout,
        "trigger_rule": trigger_rule,
    }
    if isinstance(recurrence, IntervalRecurrence):
        spec["every"] = recurrence.interval
        spec["mode"] = recurrence.mode
    elif isinstance(recurrence, CronRecurrence):
        spec["cron"] = recurrence.expr
        spec["tz"] = recurrence.tz
    spec.update(options)
    return spec


def retry_spec(policy: RetryPolicy) -> dict:
    return {
        "max_attempts": policy.max_attempts,
        "base": policy.base,
        "factor": policy.factor,
        "max_delay": policy.max_delay,
        "jitter": policy.jitter,
    }


def recurrence_from_spec(spec: dict):
    if "every" in spec:
        return IntervalRecurrence(spec["every"], spec.get("mode", Mode.FIXED_RATE))
    if "cron" in spec:
        from .cron import CronTrigger

        return CronRecurrence(CronTrigger(spec["cron"], spec["tz"]), spec["cron"], spec["tz"])
    return None


def retry_from_spec(spec: dict) -> RetryPolicy | None:
    data = spec.get("retry")
    return None if data is None else RetryPolicy(**data)
