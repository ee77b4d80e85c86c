"""Stateful property test: the engine against a small model of its rules.

Hypothesis drives schedule (with deps and a trigger rule) / cancel / retry /
advance / flip-a-task's-failure-flag on a Scheduler(ManualClock, SyncExecutor),
and after every step checks the engine against the model and against its own
event log.

The model only gives dependent tasks delay 0: when a re-armed downstream task
honours its old run_at is a choice docs/engine.md leaves open.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from taskloom.engine import (
    ManualClock,
    RetryPolicy,
    Scheduler,
    SyncExecutor,
    TaskState,
    current_run,
)

S = TaskState
WAITING = "waiting"  # PENDING or SCHEDULED: the model does not tell them apart
DONE = {S.SUCCEEDED, S.FAILED, S.SKIPPED, S.CANCELLED}
RETRY_BASE = 1.0


@dataclass
class ModelTask:
    id: str
    deps: tuple[str, ...]
    rule: str
    due: float
    max_attempts: int
    state: object = WAITING  # WAITING, RETRY_WAIT or a settled TaskState
    attempts: int = 0
    used: int = 0  # attempts used from the current retry budget
    rearmed: bool = False  # manual retry: the old due time no longer counts
    retried_before_first_run: bool = False
    dependents: list[str] = field(default_factory=list)


class EngineMachine(RuleBasedStateMachine):
    @initialize()
    def start_engine(self):
        self.clock = ManualClock()
        self.s = Scheduler(clock=self.clock, executor=SyncExecutor())
        self.events = []
        self.s.subscribe(self.events.append)
        self.s.start()
        self.model: dict[str, ModelTask] = {}
        self.fail: dict[str, bool] = {}
        self.runs: list[tuple[str, int]] = []  # (task id, attempt) as seen by the task
        self.first_due: dict[str, float] = {}

    def teardown(self):
        if hasattr(self, "s"):
            self.s.shutdown()

    # ------------------------------------------------------------------ model
    def _verdict(self, task: ModelTask) -> str:
        if not task.deps:  # a rule about upstreams says nothing without any
            return "run"
        states = [self.model[d].state for d in task.deps]
        done = [st_ for st_ in states if st_ in DONE]
        if task.rule == "all_success":
            if any(st_ is not S.SUCCEEDED for st_ in done):
                return "skip"
            return "run" if len(done) == len(states) else "wait"
        if task.rule == "all_done":
            return "run" if len(done) == len(states) else "wait"
        if S.FAILED in done:  # one_failed
            return "run"
        return "skip" if len(done) == len(states) else "wait"

    def _run(self, task: ModelTask, now: float) -> None:
        task.attempts += 1
        task.used += 1
        task.rearmed = False
        if not self.fail[task.id]:
            task.state = S.SUCCEEDED
        elif task.used < task.max_attempts:
            task.state = S.RETRY_WAIT
            task.due = now + RETRY_BASE * 2.0 ** (task.used - 1)
        else:
            task.state = S.FAILED

    def _settle_model(self) -> None:
        now = self.clock.now()
        changed = True
        while changed:
            changed = False
            for task in self.model.values():
                if task.state == WAITING:
                    verdict = self._verdict(task)
                    if verdict == "skip":
                        task.state = S.SKIPPED
                        changed = True
                    elif verdict == "run" and (task.rearmed or task.due <= now):
                        self._run(task, now)
                        changed = True
                elif task.state is S.RETRY_WAIT and task.due <= now:
                    self._run(task, now)
                    changed = True

    def _rearm_skipped_downstream(self, task: ModelTask) -> None:
        stack = list(task.dependents)
        while stack:
            dependent = self.model[stack.pop()]
            if dependent.state is S.SKIPPED:
                dependent.state = WAITING
                stack.extend(dependent.dependents)

    # ------------------------------------------------------------------ rules
    @rule(
        data=st.data(),
        delay=st.sampled_from([0.0, 0.5, 1.0, 2.5]),
        fails=st.booleans(),
        max_attempts=st.sampled_from([1, 1, 2]),
        trigger_rule=st.sampled_from(["all_success", "all_success", "all_done", "one_failed"]),
    )
    def schedule(self, data, delay, fails, max_attempts, trigger_rule):
        existing = sorted(self.model)
        deps = ()
        if existing:
            deps = tuple(data.draw(st.lists(st.sampled_from(existing), max_size=3, unique=True)))
        if deps:
            delay = 0.0
        tid = f"t{len(self.model)}"
        self.fail[tid] = fails
        policy = RetryPolicy(max_attempts=max_attempts, base=RETRY_BASE, jitter=0.0)
        due = self.clock.now() + delay
        self.model[tid] = ModelTask(tid, deps, trigger_rule, due, max_attempts)
        self.first_due[tid] = due
        for dep in deps:
            self.model[dep].dependents.append(tid)
        self.s.schedule_after(
            self._task_fn(tid),
            delay,
            name=tid,
            deps=deps,
            retry=policy,
            trigger_rule=trigger_rule,
        )
        self._settle_model()

    def _task_fn(self, tid: str):
        def task():
            self.runs.append((tid, current_run().attempt))
            if self.fail[tid]:
                raise RuntimeError(f"{tid} fails")

        return task

    def _pick(self, data, prefer) -> str:
        """A task id, usually one for which the call under test does something."""
        preferred = sorted(t.id for t in self.model.values() if prefer(t))
        everything = st.sampled_from(sorted(self.model))
        return data.draw(
            st.one_of(st.sampled_from(preferred), everything) if preferred else everything
        )

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def cancel(self, data):
        tid = self._pick(data, lambda t: t.state == WAITING or t.state is S.RETRY_WAIT)
        task = self.model[tid]
        expected = task.state == WAITING or task.state is S.RETRY_WAIT
        assert self.s.cancel(tid) is expected
        if expected:
            task.state = S.CANCELLED
        self._settle_model()

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def retry(self, data):
        tid = self._pick(data, lambda t: t.state in (S.FAILED, S.SKIPPED, S.CANCELLED))
        task = self.model[tid]
        expected = task.state in (S.FAILED, S.SKIPPED, S.CANCELLED)
        assert self.s.retry(tid) is expected
        if expected:
            task.state = WAITING
            task.used = 0
            task.rearmed = True
            task.retried_before_first_run |= task.attempts == 0
            self._rearm_skipped_downstream(task)
        self._settle_model()

    @precondition(lambda self: self.model)
    @rule(data=st.data(), fails=st.booleans())
    def set_failing(self, data, fails):
        self.fail[data.draw(st.sampled_from(sorted(self.model)))] = fails

    @rule(dt=st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 5.0]))
    def advance(self, dt):
        self.clock.advance(dt)
        self._settle_model()

    # ------------------------------------------------------------------ checks
    @invariant()
    def states_match_the_model(self):
        if not hasattr(self, "s"):
            return
        infos = {t.id: t for t in self.s.tasks()}
        assert set(infos) == set(self.model)
        for tid, task in self.model.items():
            state = infos[tid].state
            assert state not in (S.READY, S.RUNNING), (tid, state)
            coarse = WAITING if state in (S.PENDING, S.SCHEDULED) else state
            assert coarse == task.state, (tid, state, task)
            assert infos[tid].attempt == task.attempts, (tid, infos[tid], task)
        settled = Counter(t.state for t in infos.values() if t.state in DONE)
        assert settled == Counter(t.state for t in self.model.values() if t.state in DONE)

    @invariant()
    def nothing_ran_twice_per_attempt(self):
        if not hasattr(self, "s"):
            return
        assert len(self.runs) == len(set(self.runs))
        per_task = Counter(tid for tid, _ in self.runs)
        for tid, task in self.model.items():
            assert per_task[tid] == task.attempts

    @invariant()
    def events_agree_with_states_and_rules(self):
        if not hasattr(self, "s"):
            return
        seqs = [e.seq for e in self.events]
        assert seqs == list(range(1, len(seqs) + 1))
        last: dict[str, object] = {}
        retrying: set[str] = set()  # an automatic retry does not wait for its deps again
        for event in self.events:
            if event.kind == "retry_wait":
                retrying.add(event.task_id)
            elif event.kind == "running" and event.task_id in retrying:
                retrying.discard(event.task_id)
            elif event.kind == "running":
                task = self.model[event.task_id]
                deps = {d: last[d] for d in task.deps}
                assert self._allowed(task.rule, list(deps.values())), (event, deps)
                if event.attempt == 1 and not task.retried_before_first_run:
                    assert event.at >= self.first_due[task.id], event  # never early
            last[event.task_id] = event.state
        for info in self.s.tasks():
            assert last[info.id] is info.state

    @invariant()
    def heap_entries_belong_to_waiting_tasks(self):
        if not hasattr(self, "s"):
            return
        for entry in self.s.upcoming():
            assert entry.run_at > self.clock.now()
            task = self.model[entry.task_id]
            assert task.state == WAITING or task.state is S.RETRY_WAIT, (entry, task)
            if entry.kind == "retry":
                assert task.state is S.RETRY_WAIT and entry.run_at == task.due
        retry_entries = {e.task_id for e in self.s.upcoming() if e.kind == "retry"}
        assert retry_entries == {t.id for t in self.model.values() if t.state is S.RETRY_WAIT}

    @staticmethod
    def _allowed(rule: str, dep_states: list) -> bool:
        if not dep_states:
            return True
        if rule == "all_success":
            return all(s_ is S.SUCCEEDED for s_ in dep_states)
        if rule == "all_done":
            return all(s_ in DONE for s_ in dep_states)
        return S.FAILED in dep_states


def test_first_runs_are_never_early():
    """A task's first attempt never starts before its due time (checked by events)."""
    clock = ManualClock()
    s = Scheduler(clock=clock, executor=SyncExecutor())
    events = []
    s.subscribe(events.append)
    s.start()
    due = {}
    for i, delay in enumerate([0.5, 1.0, 2.5, 0.0, 1.0]):
        due[f"t{i}"] = s.schedule_after(lambda: None, delay, name=f"t{i}")
        due[f"t{i}"] = delay
    for dt in (0.25, 0.25, 0.5, 1.0, 1.0):
        clock.advance(dt)
    for event in events:
        if event.kind == "running":
            assert event.at >= due[event.task_id]
    assert sum(e.kind == "running" for e in events) == 5
    s.shutdown()


EngineMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    report_multiple_bugs=False,  # shrink one failure fast rather than several slowly
    suppress_health_check=[HealthCheck.too_slow],
)
test_engine_against_model = EngineMachine.TestCase


def test_a_task_copies_the_shared_defaults_record_on_its_first_change():
    """Rarely changed fields live on one record all default tasks share: a change
    must give the task its own copy and leave every other task at the defaults."""
    from taskloom.engine._core.task import COLD_DEFAULTS, SHARED_COLD, Task
    from taskloom.engine.options import TriggerRule

    def new(name: str, priority: int = 0, timeout: float | None = None) -> Task:
        return Task(
            name, print, order=0, priority=priority, retry=None, timeout=timeout,
            trigger_rule=TriggerRule.ALL_SUCCESS, run_at=None,
        )  # fmt: skip

    a, b = new("a"), new("b")
    a.held = False  # writing a default keeps sharing
    assert a._cold is SHARED_COLD and b._cold is SHARED_COLD
    a.held = True
    a.error = "boom"
    assert a._cold is not SHARED_COLD and (a.held, a.error) == (True, "boom")
    assert (b.held, b.error) == (False, None)
    assert {name: getattr(SHARED_COLD, name) for name in COLD_DEFAULTS} == COLD_DEFAULTS
    c = new("c", priority=3, timeout=2.0)
    assert (c.priority, c.timeout, b.priority, b.timeout) == (3, 2.0, 0, None)
    a.held = False  # back to the default: the task keeps its own copy
    assert a._cold is not SHARED_COLD and not a.held and not SHARED_COLD.held
