"""Real threads, real clock: 4 producers schedule and cancel 50,000 tasks on 4 workers.

Every task must settle exactly once (one terminal event each), no attempt may
run twice, the final states must follow from the rules, and wait() must return.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from functools import partial

import pytest

from taskloom.engine import RetryPolicy, Scheduler, TaskState, current_run

S = TaskState
TOTAL = 50_000
PRODUCERS = 4
PER_PRODUCER = TOTAL // PRODUCERS
TERMINAL = {"succeeded", "failed", "skipped", "cancelled"}
RETRY = RetryPolicy(max_attempts=2, base=0.001, jitter=0.0)


def _work(runs: list, name: str, fails: bool) -> None:
    runs.append((name, current_run().attempt))  # list.append is atomic under the GIL
    if fails:
        raise RuntimeError(f"{name} fails on purpose")


class Plan:
    """What each producer asked for, to check the outcome against."""

    def __init__(self):
        self.deps: dict[str, tuple[str, ...]] = {}
        self.fails: dict[str, bool] = {}
        self.attempts: dict[str, int] = {}
        self.cancelled: dict[str, bool] = {}
        self.order: list[str] = []  # creation order, upstream before downstream
        self.created: list[str] = []  # ids that exist, shared by the producers


def _produce(s: Scheduler, p: int, runs: list, plan: Plan, errors: list) -> None:
    rng = random.Random(p)
    try:
        for j in range(PER_PRODUCER):
            name = f"p{p}-{j}"
            deps = (f"p{p}-{j - 1 - j % 3}",) if j % 5 == 4 else ()
            if j % 7 == 3 and plan.created:  # an earlier task of any producer
                deps += (plan.created[rng.randrange(len(plan.created))],)
                deps = tuple(dict.fromkeys(deps))
            fails = j % 23 == 0
            retry = RETRY if j % 46 == 0 else None
            plan.deps[name], plan.fails[name] = deps, fails
            plan.attempts[name] = 2 if retry else 1
            plan.order.append(name)
            fn = partial(_work, runs, name, fails)
            if j % 11 == 0:  # some go through the timer heap
                s.schedule_after(fn, 0.001 * (j % 7), name=name, deps=deps, retry=retry)
            else:
                s.schedule(fn, name=name, deps=deps, retry=retry, priority=j % 3)
            plan.created.append(name)
            if j % 13 == 12:
                target = f"p{p}-{j - 5}"
                plan.cancelled[target] = s.cancel(target)
    except BaseException as exc:  # reported by the test, not lost in the thread
        errors.append(exc)
        raise


def _expected(plan: Plan, final: dict[str, TaskState], name: str) -> TaskState:
    if plan.cancelled.get(name):
        return S.CANCELLED
    if any(final[d] is not S.SUCCEEDED for d in plan.deps[name]):
        return S.SKIPPED
    return S.FAILED if plan.fails[name] else S.SUCCEEDED


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_many_producers_and_workers_settle_every_task_exactly_once():
    terminal: Counter = Counter()
    all_events = [0]
    runs: list[tuple[str, int]] = []
    plan = Plan()
    errors: list[BaseException] = []

    def count_terminal(event):  # called on the single delivery thread
        all_events[0] += 1
        if event.kind in TERMINAL:
            terminal[event.task_id] += 1

    started = time.perf_counter()
    with Scheduler(workers=4) as s:
        s.subscribe(count_terminal)
        producers = [
            threading.Thread(target=_produce, args=(s, p, runs, plan, errors), name=f"producer-{p}")
            for p in range(PRODUCERS)
        ]
        for thread in producers:
            thread.start()
        for thread in producers:
            thread.join(120)
        assert not errors, errors
        assert s.wait(timeout=120) is True
        elapsed = time.perf_counter() - started
        final = {t.id: t.state for t in s.tasks()}

    assert len(final) == TOTAL
    assert len(terminal) == TOTAL, f"{TOTAL - len(terminal)} tasks never settled"
    twice = {name: n for name, n in terminal.items() if n != 1}
    assert twice == {}, f"tasks settled more than once: {list(twice.items())[:10]}"

    per_attempt = Counter(runs)
    assert max(per_attempt.values()) == 1, "an attempt ran twice"
    per_task = Counter(name for name, _ in runs)
    mismatched = {}
    for name in plan.order:
        expected = _expected(plan, final, name)
        if final[name] is not expected:
            mismatched[name] = (final[name], expected)
        elif expected is S.SUCCEEDED and per_task[name] != 1:
            mismatched[name] = ("ran", per_task[name])
        elif expected is S.FAILED and per_task[name] != plan.attempts[name]:
            mismatched[name] = ("ran", per_task[name], "of", plan.attempts[name])
        elif expected is S.SKIPPED and per_task[name]:
            mismatched[name] = ("skipped but ran", per_task[name])
    assert mismatched == {}, list(mismatched.items())[:10]
    assert sum(plan.cancelled.values()) > 0 and S.FAILED in final.values()
    print(
        f"\nstress: {TOTAL} tasks, {len(runs)} runs, {all_events[0]} events in {elapsed:.1f}s "
        f"({TOTAL / elapsed:,.0f} tasks/s); outcomes {Counter(final.values())}"
    )
