"""Opening a workflow run on its store: resume an unfinished run, or start afresh.

``taskloom run`` and the window keep every run of a workflow in a SQLite file in
the user's data directory, keyed by the workflow file's path (``--db`` overrides
it). The process that opens a store owns it until it exits; a second one is
refused with ``StoreBusy`` naming the owner.
Opening a workflow resumes its last run when that run did not finish (after a
crash, a kill or Ctrl-C: finished tasks stay finished, interrupted attempts are
retried; tasks a kill kept from being added are added); when it did finish, when
``fresh`` is asked for, or when the file no longer has a task the run has, a new
run starts.
Past attempts are kept for ``taskloom history`` either way.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path


def default_db_path(workflow) -> Path:
    """The default store of a workflow, keyed by its file's resolved path: two
    projects whose files share a name never share a store. The workflow's name
    stays in the file name so that a person can tell the stores apart."""
    from platformdirs import user_data_path

    safe = re.sub(r"[^\w.-]+", "_", workflow.name).strip(".") or "workflow"
    source = str(workflow.path.resolve()) if workflow.path is not None else workflow.name
    key = hashlib.sha256(source.encode()).hexdigest()[:12]
    return user_data_path("taskloom") / "runs" / f"{safe}-{key}.db"


@dataclass
class OpenedRun:
    scheduler: object
    store: object
    resumed: bool
    note: str


def open_run(workflow, db_path: Path, *, fresh: bool = False, **scheduler_kwargs) -> OpenedRun:
    """A scheduler on ``db_path`` with the workflow's tasks, not yet started.

    Raises ``engine.store.StoreError`` for a store that cannot be used.
    """
    from engine import Scheduler
    from engine.store import SQLiteStore

    store = SQLiteStore(db_path)
    scheduler = Scheduler(store=store, **scheduler_kwargs)
    restored = {info.id: info for info in scheduler.tasks()}
    missing = set(workflow.tasks) - set(restored)  # a kill while the run was being set up
    removed = set(restored) - set(workflow.tasks)  # the file changed since
    finished = not missing and all(
        info.state.settled and not info.recurring for info in restored.values()
    )
    if restored and not (fresh or removed or finished):
        workflow.schedule_into(scheduler, skip=set(restored))
        done = sum(1 for info in restored.values() if info.state.settled and not info.recurring)
        total = len(workflow.tasks)
        note = f"resuming the unfinished run in {db_path}: {done} of {total} tasks done"
        return OpenedRun(scheduler, store, True, note)
    if restored:
        scheduler.shutdown()
        store.new_run()
        scheduler = Scheduler(store=store, **scheduler_kwargs)
    workflow.schedule_into(scheduler)
    return OpenedRun(scheduler, store, False, f"run {store.run} of {workflow.name} in {db_path}")
