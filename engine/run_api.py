"""The run interface: everything the window and the command line ask of a run.

Two classes implement ``RunInterface``: ``Scheduler`` (a run this process owns) and
``watched_run.WatchedRun`` (a run another process owns, followed through its
store). A caller typed against ``RunInterface`` never needs to know which one it
has: what a watched run cannot do (graph edits) it refuses with ``Refused``, whose
message says why, never with ``AttributeError``; and ``why_not`` tells, for each
``Action``, why it cannot be done now, in the words a window shows.

The rules themselves stay where they are applied (``_core.lifecycle``); this module
holds the words (``refusal_text``) and the one walk of ``clear``'s downstream rule
(``clear_plan``), shared by the owner and the watcher, so no caller restates them.
mypy checks that both classes implement the whole interface (tests/test_run_api_types.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .models import Action, Attempt, Entry, Event, TaskInfo
from .states import TaskState

if TYPE_CHECKING:
    from .clock import Clock
    from .definitions import TaskDefinition
    from .store import StoreReads as StoreReads  # for views, which must not import the store

S = TaskState


class Refused(RuntimeError):
    """An action this run does not do at all (a graph edit asked of a watched run):
    the message says why and what to do instead."""


class RunInterface(Protocol):
    """What the window and the command line ask of a run, owned or watched."""

    # -- what the run is ---------------------------------------------------------
    def snapshot(self) -> tuple[int, list[TaskInfo], list[Entry]]:
        """(seq, tasks, upcoming) as one view; later events have a greater seq."""
        ...

    def tasks(self) -> list[TaskInfo]:
        """Every task, in the order they were added."""
        ...

    def task(self, task_id: str) -> TaskInfo:
        """One task; ``KeyError`` if unknown."""
        ...

    def definition(self, task_id: str) -> TaskDefinition:
        """How the task is defined (what Save writes); ``KeyError`` if unknown."""
        ...

    def upcoming(self, limit: int = 100) -> list[Entry]:
        """The next timer entries, earliest first."""
        ...

    def attempts(self, task_id: str) -> list[Attempt]:
        """The task's recent attempts in this run, oldest first."""
        ...

    def live_log(self, task_id: str) -> str | None:
        """The log file the task's attempt in flight writes, or None."""
        ...

    def adoptions(self) -> dict[str, tuple[int, str]]:
        """{task: (attempt, what was found)} adopted when this run's owner opened it."""
        ...

    def outputs(self, task_id: str) -> dict[str, Any] | None:
        """What the task's latest success gave its dependents, or None (not told)."""
        ...

    def jitter_delays(self, task_id: str) -> dict[int, float]:
        """The jitter delay each recent attempt waited, by number ({}: not told)."""
        ...

    def pool_wait(self, task_id: str) -> str | None:
        """What a ready task waits for when its pool is full, or None (not told)."""
        ...

    def pool_usage(self) -> dict[str, tuple[int, int, list[str]]]:
        """Each pool's runs in flight, limit and waiting tasks ({}: not told)."""
        ...

    def would_close_cycle(self, task_id: str, dep_id: str) -> list[str] | None:
        """The cycle ``add_dependency(task_id, dep_id)`` would close, or None."""
        ...

    @property
    def paused(self) -> bool:
        """Whether the whole run is paused."""
        ...

    @property
    def clock(self) -> Clock:
        """The run's clock (its times are on it)."""
        ...

    @property
    def workers(self) -> int | None:
        """How many attempts may run at once, if known."""
        ...

    @property
    def busy(self) -> int | None:
        """Attempts whose code runs now, if known."""
        ...

    @property
    def store(self) -> StoreReads | None:
        """The run's store, for its queries (read it off the GUI thread), or None: an
        owner's ``SQLiteStore`` or a watcher's ``StoreReader``."""
        ...

    @property
    def run(self) -> int | None:
        """The run's number in its store, or None without one."""
        ...

    @property
    def owner_alive(self) -> bool:
        """Whether the process that owns the run still does."""
        ...

    @property
    def edit_refusal(self) -> str | None:
        """Why no graph edit is possible at all, or None."""
        ...

    # -- listening ---------------------------------------------------------------
    def subscribe(self, callback: Callable[[Event], object]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event; returns what stops it."""
        ...

    def on(self, kind: str, callback: Callable[[Event], object]) -> Callable[[], None]:
        """Call ``callback(event)`` for the events of ``kind``; returns what stops it."""
        ...

    def on_attempts(self, callback: Callable[[str], object]) -> Callable[[], None]:
        """Call ``callback(task_id)`` once attempts ``attempts`` lacked have been read."""
        ...

    # -- what may be done, and why not -------------------------------------------
    def allowed_actions(self, task_id: str) -> frozenset[Action]:
        """What can usefully be done to the task now."""
        ...

    def why_not(self, task_id: str, action: Action) -> str | None:
        """Why ``action`` cannot be done to the task now, or None if it can."""
        ...

    def clear_plan(self, task_ids: str | Iterable[str], downstream: bool = False) -> list[str]:
        """What ``clear`` would reset now, without changing anything."""
        ...

    # -- steering ----------------------------------------------------------------
    def cancel(self, task_id: str) -> bool:
        """Cancel a task that has not settled."""
        ...

    def retry(self, task_id: str) -> bool:
        """Run a failed, skipped or cancelled task again."""
        ...

    def run_now(self, task_id: str) -> bool:
        """Run a task that waits for its time now."""
        ...

    def clear(self, task_ids: str | Iterable[str], downstream: bool = False) -> list[str]:
        """Run settled one-shot tasks again within this run (Run again)."""
        ...

    def pause(self, task_id: str | None = None) -> None:
        """Hold a task, or the whole run (None)."""
        ...

    def resume(self, task_id: str | None = None) -> None:
        """Undo ``pause``."""
        ...

    # -- graph edits (a watched run refuses them: ``Refused``); new tasks come
    # through ``TaskDefinition.submit(run)``, which a watched run refuses too ----
    def add_dependency(self, task_id: str, dep_id: str) -> None:
        """Make ``task_id`` wait for ``dep_id``."""
        ...

    def remove_dependency(self, task_id: str, dep_id: str) -> None:
        """Remove that edge."""
        ...

    def remove(self, task_id: str) -> bool:
        """Take a task that is not running out of the run."""
        ...

    def restore(self, task_id: str) -> list[str]:
        """Put back a task ``remove`` took out."""
        ...

    def update(self, task_id: str, definition: TaskDefinition) -> None:
        """Replace the task's definition."""
        ...

    # -- the end -----------------------------------------------------------------
    def start(self) -> None:
        """Start the run (nothing to do for a watched one)."""
        ...

    def shutdown(self, wait: bool = True, *, cancel_running: bool = False) -> None:
        """Stop (a watched run: stop watching; its owner goes on)."""
        ...


# -- the words for "why not" ----------------------------------------------------------
def refusal_text(
    info: TaskInfo,
    action: Action,
    *,
    in_flight: bool = False,
    cancelling: bool = False,
    upstream_rules_out: bool = False,
) -> str:
    """Why ``action`` cannot be done to the task ``info`` shows, given that it cannot:
    ``in_flight`` an attempt of it still runs, ``cancelling`` a cancel is pending,
    ``upstream_rules_out`` its dependencies would skip it again (see
    ``Scheduler.allowed_actions`` for the rules)."""
    tid, state = info.id, info.state
    name = state.name.lower()
    if action is Action.CANCEL:
        if cancelling:
            return f"{tid} is being cancelled already"
        return f"{tid} is {name}: only a task that has not finished can be cancelled"
    if action is Action.RETRY:
        if state is S.SKIPPED and not in_flight:
            return f"{tid} was skipped because an upstream task failed: retry that one"
        if state in (S.FAILED, S.CANCELLED) and not in_flight and upstream_rules_out:
            return f"{tid} would be skipped again: an upstream task did not succeed, retry that one"
        if in_flight and state.settled:
            return f"{tid} has an attempt still running: wait until it has ended"
        return f"{tid} is {name}: only a failed, skipped or cancelled task can be retried"
    if action is Action.RUN_NOW:
        if cancelling:
            return f"{tid} is being cancelled: nothing of it can start"
        if info.recurring and in_flight:
            return f"{tid} runs now and its overlap policy skips extra runs"
        return f"{tid} is {name}: nothing waits for a time that Run now could bring forward"
    if action is Action.CLEAR:
        if info.recurring:
            return f"{tid} is recurring: use Run now for an extra run"
        if in_flight and state.settled:
            return f"{tid} has an attempt still running: wait until it has ended"
        return f"{tid} is {name}: only a finished task can run again"
    if action is Action.PAUSE:
        return f"{tid} is paused already"
    if action is Action.RESUME:
        return f"{tid} is not paused"
    if action is Action.REMOVE:
        return f"{tid} is running: cancel it, or wait until it has finished"
    if action is Action.EDIT:
        if in_flight:
            return f"{tid} is running: edit it before it starts or once it has settled"
        return f"{tid} is {name}: edit it before it starts or once it has settled"
    return (  # ADD_DEPENDENCY
        f"{tid} is {name}: only a task that has not started, or a recurring one, "
        "can wait for another"
    )


# -- the one walk of clear's rule ------------------------------------------------------
T = TypeVar("T", bound=Hashable)


def clear_plan(
    roots: Iterable[T],
    downstream: bool,
    dependents: Callable[[T], Iterable[T]],
    recurring: Callable[[T], bool],
    clearable: Callable[[T], bool],
) -> set[T]:
    """What ``clear(roots, downstream)`` resets: the roots and, with ``downstream``,
    every ``clearable`` (settled, nothing in flight) one-shot task below them; the
    walk goes through unclearable one-shot tasks and stops at recurring ones."""
    chosen = set(roots)
    if downstream:
        stack = [d for root in chosen for d in dependents(root)]
        while stack:
            task = stack.pop()
            if task in chosen or recurring(task):
                continue
            if clearable(task):
                chosen.add(task)
            stack.extend(dependents(task))
    return chosen


def ordered_clear_plan(
    tasks: Mapping[str, TaskInfo],
    task_ids: str | Iterable[str],
    downstream: bool,
    clearable: Callable[[str], bool],
) -> list[str]:
    """``clear_plan`` over task snapshots (a watched run's), in the run's order;
    ``KeyError`` for an unknown id, ``ValueError`` for one ``clear`` refuses."""
    ids = [task_ids] if isinstance(task_ids, str) else list(task_ids)
    for tid in ids:
        info = tasks[tid]
        if not clearable(tid):
            what = "recurring" if info.recurring else info.state.name
            raise ValueError(f"task {tid!r} is {what}: only a settled one-shot task can be cleared")
    chosen = clear_plan(
        ids,
        downstream,
        lambda tid: [d for d in tasks[tid].dependents if d in tasks],
        lambda tid: tasks[tid].recurring,
        clearable,
    )
    return [tid for tid in tasks if tid in chosen]
