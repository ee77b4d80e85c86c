"""Trigger rules: when a task's dependencies allow it to run, or never will.

A mixin of ``Scheduler``; runs under the engine lock. ``_decide`` is the one
place a trigger rule is evaluated; ``_evaluate_many`` spreads SKIPPED downstream
without recursion, and re-arms tasks downstream of a recurring one after each new
upstream success.
"""

from __future__ import annotations

from collections.abc import Iterable

from .options import TriggerRule
from .states import TaskState
from .task import Task

S = TaskState
WAIT, RELEASE, SKIP = 0, 1, 2  # what _decide says of a task's trigger rule


class DependencyRules:
    def _refresh_repeats(self, start: Task) -> None:
        """Keep ``repeats`` (recurring or downstream of recurring) right after an edit."""
        stack = [start]
        while stack:
            task = stack.pop()
            repeats = task.recurrence is not None or any(
                self._tasks[d].repeats for d in task.deps if d in self._tasks
            )
            if repeats == task.repeats:
                continue
            task.repeats = repeats
            if not task.state.settled:
                self._unsettled += -1 if repeats else 1
                self._notify_if_settled()
            stack.extend(self._tasks[d] for d in task.dependents)

    def _decide(self, task: Task) -> int:
        """Can the task's trigger rule be met now, later, or never?"""
        n = len(task.deps)
        if n == 0:
            return RELEASE
        succeeded = failed = done = 0
        tasks = self._tasks
        for dep_id in task.deps:
            dep = tasks.get(dep_id)
            if dep is None:
                continue
            if dep.repeats:  # met by each new success, never "failed for good"
                if dep.successes > (task.consumed or {}).get(dep_id, 0):
                    succeeded += 1
                    done += 1
                continue
            state = dep.state
            if state is S.SUCCEEDED:
                succeeded += 1
                done += 1
            elif state is S.FAILED:
                failed += 1
                done += 1
            elif state is S.SKIPPED or state is S.CANCELLED:
                done += 1
        rule = task.trigger_rule
        if rule == TriggerRule.ALL_SUCCESS:
            if done > succeeded:
                return SKIP
            return RELEASE if succeeded == n else WAIT
        if rule == TriggerRule.ALL_DONE:
            return RELEASE if done == n else WAIT
        if failed:  # TriggerRule.ONE_FAILED
            return RELEASE
        return SKIP if done == n else WAIT

    def _evaluate_many(self, task_ids: Iterable[str]) -> None:
        """Re-check waiting dependents; SKIPPED spreads downstream without recursion."""
        stack = list(task_ids)
        tasks = self._tasks
        while stack:
            task = tasks.get(stack.pop())
            if task is None or task.runs or task.ready is not None:
                continue
            state = task.state
            if state is S.PENDING:
                decision = self._decide(task)
                if decision == RELEASE:
                    self._release(task, first=task.attempt == 0)
                elif decision == SKIP:
                    self._set_state(task, S.SKIPPED)
                    stack.extend(task.dependents)
            elif (  # downstream of a recurring task: runs again after each upstream success
                task.repeats
                and task.recurrence is None
                and state.settled
                and state is not S.CANCELLED
                and self._decide(task) == RELEASE
            ):
                task.waiting_runs = 1
                self._make_ready(task)

    def _after_settled(self, task: Task) -> None:
        """A task reached a final outcome (for now): wake what depends on it."""
        if task.dependents:
            self._evaluate_many(task.dependents)
