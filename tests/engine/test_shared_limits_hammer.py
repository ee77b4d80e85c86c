"""A pool is never over its limit: hypothesis drives adds, cancels, pauses and
waits on a scheduler with 8 worker threads while each task counts, as it runs,
how many of its pool's tasks run beside it."""

from __future__ import annotations

import threading
import time

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from taskloom.engine import Scheduler

LIMITS = {"a": 1, "b": 3}


class PoolHammer(RuleBasedStateMachine):
    @initialize()
    def start(self):
        self.lock = threading.Lock()
        self.now = dict.fromkeys(LIMITS, 0)
        self.most = dict.fromkeys(LIMITS, 0)
        self.ran: list[str] = []
        self.ids: list[str] = []
        self.s = Scheduler(workers=8, pools=LIMITS)
        self.s.start()

    def body(self, tid: str, pool: str | None, work: int):
        def task():
            if pool is not None:
                with self.lock:
                    self.now[pool] += 1
                    self.most[pool] = max(self.most[pool], self.now[pool])
            try:
                time.sleep(work / 1000)  # the task's work: lets other workers overlap it
            finally:
                with self.lock:
                    self.ran.append(tid)
                    if pool is not None:
                        self.now[pool] -= 1

        return task

    @rule(
        pool=st.sampled_from([None, "a", "b"]),
        priority=st.integers(-2, 2),
        work=st.integers(0, 3),
        copies=st.integers(1, 6),
    )
    def add(self, pool, priority, work, copies):
        for _ in range(copies):
            tid = f"t{len(self.ids)}"
            self.ids.append(tid)
            self.s.add(self.body(tid, pool, work), name=tid, pool=pool, priority=priority)

    @rule(data=st.data())
    def cancel(self, data):
        if self.ids:
            self.s.cancel(data.draw(st.sampled_from(self.ids)))

    @rule(data=st.data())
    def pause_and_resume(self, data):
        if self.ids:
            tid = data.draw(st.sampled_from(self.ids))
            self.s.pause(tid)
            self.s.resume(tid)

    @rule()
    def wait(self):
        assert self.s.wait(30)
        assert {name: usage[0] for name, usage in self.s.pool_usage().items()} == {
            "a": 0,
            "b": 0,
        }
        assert all(usage[2] == [] for usage in self.s.pool_usage().values())

    @invariant()
    def never_over_the_limit(self):
        with self.lock:
            assert all(self.most[p] <= LIMITS[p] for p in LIMITS), self.most
        for busy, limit, _ in self.s.pool_usage().values():
            assert busy <= limit

    def teardown(self):
        s = getattr(self, "s", None)
        if s is not None:
            assert s.wait(30)
            s.shutdown()
            assert self.most["a"] <= 1 and self.most["b"] <= 3
            assert len(set(self.ran)) == len(self.ran)  # each task ran at most once


TestPoolHammer = PoolHammer.TestCase
TestPoolHammer.settings = settings(
    max_examples=12,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
