"""The owner of a workflow's run: what a process that runs a workflow file builds around
its Scheduler, written once for ``taskloom run`` (cli.py) and the window (sessions.py).

In order (docs/cli.md, "Quick to answer"):

1. ``build_executor``: the workflow's executor (None: the engine's own threads).
2. ``open_owned_run``: the store and the scheduler with the file's tasks, not started
   (``runs.open_run``), and the run's ``TASKLOOM_RUN_ID`` for its commands.
3. ``OwnedRun.attach()``: the feed for watchers (subscribed, its thread not started)
   and the workflow's hooks, before the engine starts so that neither misses an event.
4. ``OwnedRun.settle(retention)``: what can wait until the first commands run (the
   command line) or the window is up: the feed's thread, pruning old runs and their
   logs, and the pruner that keeps each task's last attempts.
5. ``OwnedRun.close_parts()``: feed and pruner stopped, after the engine and before the
   store closes. Hooks, the executor and the store are the caller's to close: the
   command line and the window end a run differently.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskloom.engine.feed import FeedWriter

    from .hooks import HookRunner
    from .runs import AttemptPruner

log = logging.getLogger(__name__)


def build_executor(spec: str, workers: int):
    """None for the engine's own threads, else a ``concurrent.futures.Executor``."""
    if spec == "threads":  # the usual case: no need to load the pools (multiprocessing)
        return None
    from taskloom.engine.pools import make_executor

    return make_executor(spec, workers)


class OwnedRun:
    """An opened run (``runs.OpenedRun``) and the parts its owner adds around it."""

    def __init__(self, workflow, opened, log_dir) -> None:
        self.workflow = workflow
        self.opened = opened
        self.scheduler = opened.scheduler
        self.store = opened.store
        self.log_dir = Path(log_dir)
        self.feed: FeedWriter | None = None  # publishes the run for windows that watch it
        self.hooks: HookRunner | None = None  # the workflow's hooks and notify sinks
        self.pruner: AttemptPruner | None = None  # keeps a long run's store bounded

    @property
    def resumed(self) -> bool:
        return self.opened.resumed

    @property
    def note(self) -> str:
        return self.opened.note

    @property
    def env(self):
        return self.opened.env

    def attach(self) -> None:
        """The feed and the hooks, subscribed before the engine starts."""
        from taskloom.engine.feed import FeedWriter

        from .hooks import attach_hooks

        self.feed = FeedWriter(self.scheduler, self.store)
        # on_failure & co. and [workflow.notify]: run off the engine's threads, bounded
        self.hooks = attach_hooks(
            self.scheduler, self.workflow, self.store, log_dir=self.log_dir, env=self.env
        )

    def settle(self, retention) -> None:
        """What can wait for the first commands: the feed's thread, pruning the runs
        before the last few (and their logs), the attempt pruner."""
        from .runs import AttemptPruner, prune

        if self.feed is not None:
            self.feed.start()
        try:
            prune(self.store, retention, str(self.log_dir))
        except Exception as exc:  # housekeeping: the run goes on, its store grows
            log.warning("pruning old runs failed: %s", exc)
        # A long run keeps each task's last attempts only (places.Retention.attempts).
        self.pruner = AttemptPruner(self.store, retention.attempts, self.log_dir).start()

    def close_parts(self) -> None:
        """Watchers learn that the owner stopped; the pruner stops. Idempotent."""
        if self.feed is not None:
            self.feed.close()
        if self.pruner is not None:
            self.pruner.stop()


def open_owned_run(
    workflow,
    db_path,
    *,
    log_dir,
    fresh: bool = False,
    decide=None,
    before_tasks=None,
    params: dict | None = None,
    lock_kind: str = "workflow",
    label: str | None = None,
    **scheduler_kwargs,
) -> OwnedRun:
    """``runs.open_run`` (its errors too) with the owner's additions: the run's id for
    its commands, and the log folder given to the scheduler as text."""
    from .runs import open_run

    # Lets a run's commands share state safely (see examples/scripts/attempts.py).
    os.environ["TASKLOOM_RUN_ID"] = os.urandom(6).hex()  # 12 hex digits, as uuid4's were
    opened = open_run(
        workflow,
        db_path,
        fresh=fresh,
        decide=decide,
        before_tasks=before_tasks,
        params=params,
        lock_kind=lock_kind,
        label=label,
        log_dir=str(log_dir),
        **scheduler_kwargs,
    )
    return OwnedRun(workflow, opened, log_dir)
