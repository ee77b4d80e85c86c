"""What a task is and why it is not running, in words, for the inspector.

``definition_rows`` turns a ``TaskDefinition`` into the inspector's rows (what it
runs, in which folder, its trigger with the cron zone and the next times in that
zone and local time, retries as "attempt 2 of 4, next in 2 s", timeout, trigger
rule). ``why_not_running`` answers the question people ask most about a task that
is not running, from the states the engine reports.
"""

from __future__ import annotations

from datetime import UTC, datetime

from taskloom.engine import TaskState
from taskloom.engine.durations import format_duration

from .run_summary import describe_delay
from .task_spec import target_text

S = TaskState
RULE_WORDS = {
    "all_success": "all dependencies succeeded",
    "all_done": "all dependencies finished, whatever the outcome",
    "all_failed": "all dependencies failed",
    "one_success": "one dependency succeeded",
    "one_failed": "one dependency failed",
    "none_failed": "no dependency failed (skipped ones count as done)",
}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def attempts_text(n: int) -> str:
    """ "1 attempt", "3 attempts" ("1 attempts" read wrong)."""
    return _plural(n, "attempt")


def _clock(moment: datetime) -> str:
    return moment.strftime("%a %H:%M:%S")


def trigger_text(definition, now: datetime | None = None, count: int = 2) -> str:
    """The task's trigger; a cron expression with its zone and the next ``count``
    times in that zone and in local time (the card shows local time)."""
    now = now or datetime.now(UTC)
    kind = definition.schedule_kind
    if kind == "at":
        return f"at {definition.at.astimezone().strftime('%Y-%m-%d %H:%M:%S')} (local)"
    if kind == "after":
        return f"{format_duration(definition.after)} after the run starts"
    if kind == "every":
        mode = " after each run ends" if str(definition.mode) == "fixed_delay" else ""
        return f"every {format_duration(definition.every)}{mode}"
    if kind == "cron":
        from taskloom.engine.cron import CronTrigger

        zone = definition.timezone or "UTC"
        text = f"cron “{definition.cron}” in {zone}"
        try:
            times = CronTrigger(definition.cron, zone).next_n(now, count)
        except (ValueError, KeyError):
            return text
        nexts = [f"{_clock(t)} {zone} = {_clock(t.astimezone())} local" for t in times]
        return text + "; next " + "; then ".join(nexts)
    return "when its dependencies allow"


def retry_text(definition, info, retry_at: float | None, clock_now: float) -> str:
    """ "attempt 2 of 4, next in 2 s" while it retries, else the policy ("up to 4
    attempts, backoff 1 s doubling"), or "no retries"."""
    policy = definition.retry
    if policy is None or policy.max_attempts <= 1:
        return "no retries"
    if info is not None and info.state is S.RETRY_WAIT:
        n = info.attempt + 1
        when = "" if retry_at is None else f", next {describe_delay(retry_at - clock_now)}"
        return f"attempt {n} of {policy.max_attempts}{when}"
    growth = f" ×{policy.factor:g}" if policy.factor != 1 else ""
    return (
        f"up to {policy.max_attempts} attempts, backoff {format_duration(policy.base)}{growth}"
        f" (at most {format_duration(policy.max_delay)})"
    )


def definition_rows(definition, info=None, retry_at=None, clock_now: float = 0.0) -> dict:
    """{row label: text} of what the task is (see the module doc)."""
    shown = target_text(definition.action)
    if shown is None:
        runs = f"Python object {definition.action!r}"
    else:
        kind, text = shown
        runs = f"{kind}: {text}"
    folder = getattr(definition.action, "cwd", None)
    rows = {
        "runs": runs,
        "folder": folder or "—",
        "trigger": trigger_text(definition),
        "retry": retry_text(definition, info, retry_at, clock_now),
        "timeout": "none" if definition.timeout is None else format_duration(definition.timeout),
        "rule": RULE_WORDS.get(str(definition.trigger_rule), str(definition.trigger_rule)),
    }
    if definition.recurring:
        rows["trigger"] += f" (overlap {definition.overlap}, misfire {definition.misfire})"
    if definition.jitter:
        rows["trigger"] += f"; starts up to {format_duration(definition.jitter)} late (jitter)"
    if definition.pool:
        rows["rule"] += f"; counts against pool {definition.pool}"
    return rows


def _failed_upstream(tid: str, tasks: dict) -> list[str]:
    """The FAILED tasks (or CANCELLED) upstream of ``tid`` that made it skip."""
    found, seen, stack = [], set(), list(tasks[tid].deps) if tid in tasks else []
    while stack:
        up = stack.pop()
        if up in seen or up not in tasks:
            continue
        seen.add(up)
        state = tasks[up].state
        if state in (S.FAILED, S.CANCELLED):
            found.append(up)
        elif state is S.SKIPPED:
            stack.extend(tasks[up].deps)
    return sorted(found)


def why_not_running(
    info,
    tasks: dict,
    *,
    dispatcher_paused: bool,
    clock_now: float,
    busy: int | None = None,
    workers: int | None = None,
    retry_at: float | None = None,
    pool_wait: str | None = None,
) -> str:
    """Why ``info``'s task is not running now, in words ("" while it runs).
    ``pool_wait``: what it waits for when its pool's slots are taken (``[pools]``)."""
    state = info.state
    if state is S.RUNNING:
        return ""
    if info.paused and not state.settled:
        return "paused: Resume (Ctrl+Shift+P) lets it start"
    if state is S.PENDING:
        waiting = [d for d in info.deps if d in tasks and not tasks[d].state.settled]
        if waiting:
            return "waiting for " + ", ".join(waiting)
        return "waiting for its dependencies"
    if state is S.SCHEDULED:
        when = "" if info.run_at is None else f" ({describe_delay(info.run_at - clock_now)})"
        what = "its next occurrence" if info.recurring else "its time"
        return f"waiting for {what}{when}"
    if state is S.READY:
        if dispatcher_paused:
            return "ready, but the dispatcher is paused: Resume all lets it start"
        if pool_wait:
            return f"ready, {pool_wait}"
        if busy is not None and workers:
            return f"ready, waiting for a worker ({busy}/{workers} busy)"
        return "ready, waiting for a worker"
    if state is S.RETRY_WAIT:
        when = "" if retry_at is None else f" {describe_delay(retry_at - clock_now)}"
        return f"backing off after a failure: retries{when}"
    if state is S.SKIPPED:
        failed = _failed_upstream(info.id, tasks)
        if failed:
            return "skipped because " + ", ".join(failed) + " failed: retry that to run it"
        return "skipped: its trigger rule cannot be met"
    if state is S.FAILED:
        return "failed for good (its retries are used up): Retry or Run again"
    if state is S.CANCELLED:
        return "cancelled"
    return "finished"
