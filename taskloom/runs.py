"""Opening a workflow run on its store: resume an unfinished run, or start afresh.

``taskloom run`` and the window keep every run of a workflow in a SQLite file in
the user's data directory, keyed by the workflow file's path (``--db`` overrides
it). The process that opens a store owns it until it exits; a second one is
refused with ``StoreBusy`` naming the owner.

Opening a workflow resumes its last run when that run did not finish (after a
crash, a kill or Ctrl-C: finished tasks stay finished, interrupted and lost
attempts run again; tasks a kill kept from being added are added); when it did
finish, when ``fresh`` is asked for, or when the file no longer has a task the
run has, a new run starts. Past attempts are kept for ``taskloom history``
either way.

One process runs a workflow file at a time, whatever the store: the owner also
holds a per-user lock keyed by the file's resolved path (``WorkflowLock``), so a
cron or systemd start whose ``XDG_DATA_HOME`` (or ``--db``) differs is refused
with ``StoreBusy`` naming the owner and its store.

The file is the truth: a resumed task whose definition changed in the file
(command, call, args, env, cwd, deps, triggers, ...) is defined anew from the
file and runs with it; so is one whose stored definition differs from the file
(a store somebody edited: what runs is what the file says), with its downstream
tasks that were skipped because of it. A task whose success is already on disk
is kept as it is: a resumed run never runs a succeeded task again (start a fresh run for that).

A run that is not the workflow's own (``taskloom backfill``'s, ``label`` "backfill
2026-11-01 to 2026-11-07") is kept in the same store, labelled (store meta
``run_labels``): only an open with the same label resumes it, so ``taskloom run``
and the window start the workflow's own run after an unfinished backfill, and a
backfill starts its own run after the workflow's.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskloom.engine import Scheduler
    from taskloom.engine.store import SQLiteStore

DEFINITIONS_KEY = "definitions"  # store meta: {task id: fingerprint} of the run's file
RUN_LABELS_KEY = "run_labels"  # store meta: {run: label}, engine/_store/reads.py
PARAMS_KEY = "params"  # store meta: {KEY: value} given with --param, kept for a resume
REDEFINED = "lost: its definition changed in the workflow file while it was running"


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
    scheduler: Scheduler
    store: SQLiteStore
    resumed: bool
    note: str
    changed: tuple[str, ...] = ()  # tasks redefined from the file on resume
    params: dict | None = None  # the run's --param values (kept with it in the store)
    env: dict | None = None  # what every command and hook of the run is told (run_env)


@dataclass(frozen=True)
class RunDifferences:
    """What differs between a workflow file and the unfinished run stored for it,
    by the definitions' fingerprints (store meta "definitions")."""

    added: tuple[str, ...]  # in the file, not in the stored run
    removed: tuple[str, ...]  # in the stored run, not in the file
    changed: tuple[str, ...]  # in both, defined differently
    kept: tuple[str, ...]  # of ``changed``: succeeded already, so a resume keeps them
    done: int  # stored tasks settled
    total: int  # stored tasks

    @property
    def resumable(self) -> bool:
        """A stored run with a task the file no longer has is not resumed: a new run starts."""
        return not self.removed

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def open_run(
    workflow,
    db_path: Path,
    *,
    fresh: bool = False,
    decide=None,
    before_tasks=None,
    retention=None,
    params: dict | None = None,
    lock_kind: str = "workflow",
    label: str | None = None,
    **scheduler_kwargs,
) -> OpenedRun:
    """A scheduler on ``db_path`` with the workflow's tasks, not yet started.

    ``decide(differences)``, when given, is asked before an unfinished stored run
    that differs from the file is resumed: True resumes it (changed tasks run as
    the file says now), False starts a new run from the file. Without it (the
    command line), such a run is resumed. A run the file removed tasks from is
    never resumed; ``decide`` is still called, so that the person is told why.
    ``before_tasks(scheduler)``, when given, is called before any task is added
    (to subscribe to the run's first events).
    ``params`` ({KEY: value}) are recorded with a new run; a resumed run keeps the
    ones it was started with (the note says so when others were given). Every
    command of the run sees them as ``TASKLOOM_PARAM_KEY``, and the run's number
    as ``TASKLOOM_RUN`` (``run_env``).
    ``retention`` (``places.Retention``), when given, prunes the store of all but
    its last runs and deletes the pruned runs' task logs, only those inside the
    ``log_dir`` scheduler argument (a folder Taskloom manages).

    ``lock_kind`` names the per-workflow lock taken (``WorkflowLock``): runs of
    selected tasks (``taskloom run --task``) take one of their own.

    ``label`` (None: the workflow's own run) names a run of another kind, e.g.
    "backfill 2026-11-01 to 2026-11-07": the stored run is resumed only when it has
    the same label, and a new run is labelled with it (``store.run_labels()``).

    Raises ``engine.store.StoreError`` for a store that cannot be used, and
    ``engine.store.StoreBusy`` when another live process owns it or runs the file.
    """
    from taskloom.engine.store import SQLiteStore, WorkflowLock

    lock = None
    if workflow.path is not None:
        lock = WorkflowLock.acquire(workflow.path, Path(db_path).expanduser(), lock_kind)
    try:
        store = SQLiteStore(db_path)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    if lock is not None:
        store.hold(lock)
    try:
        opened = _open(
            workflow, store, fresh, scheduler_kwargs, decide, before_tasks, params, label
        )
        if retention is not None:
            prune(store, retention, scheduler_kwargs.get("log_dir"))
        return opened
    except BaseException:
        store.close()
        raise


def prune(store, retention, log_dir) -> int:
    """Keep the store's last ``retention.runs`` runs and the task logs of its last
    ``retention.logs``; a log file is deleted only if it lies in ``log_dir``.
    Returns how many files were deleted. The labels of the runs it forgot (a
    backfill's) go with them."""
    deleted = delete_logs(store.prune_runs(retention.runs, retention.logs), log_dir)
    labels = store.run_labels()
    first = store.run - retention.runs + 1
    if any(run < first for run in labels):
        kept = {str(run): label for run, label in labels.items() if run >= first}
        store.set_meta(RUN_LABELS_KEY, json.dumps(kept))
    return deleted


def delete_logs(paths, log_dir) -> int:
    """Delete the log files ``paths`` that lie in ``log_dir``; how many were deleted."""
    if not log_dir:
        return 0
    folder = Path(log_dir).resolve()
    deleted = 0
    for text in paths:
        path = Path(text)
        if path.suffix != ".log" or path.resolve().parent != folder:
            continue  # written somewhere else (--log-dir, an executor's own folder)
        try:
            path.unlink()
            deleted += 1
        except FileNotFoundError:
            pass
        except OSError as exc:  # left behind (its row no longer names it): say so
            import logging

            logging.getLogger("taskloom.cli").warning("cannot delete old log %s: %s", path, exc)
    return deleted


def run_env(run: int, params: dict) -> dict[str, str]:
    """The variables every command of a run sees: its number and its params."""
    env = {"TASKLOOM_RUN": str(run)}
    env.update({f"TASKLOOM_PARAM_{key}": str(value) for key, value in params.items()})
    return env


def record_params(scheduler, store, params: dict) -> dict[str, str]:
    """Give a new run, not started yet, ``params`` (the window's Start bar): kept in
    the store for a resume and told to its commands; the run's env (``run_env``)."""
    if store is not None:
        store.set_meta(PARAMS_KEY, json.dumps(params))
        env = run_env(store.run, params)
    else:  # a run kept nowhere has no number
        env = {f"TASKLOOM_PARAM_{key}": value for key, value in params.items()}
    scheduler.set_env(env)
    return env


def _open(
    workflow,
    store,
    fresh: bool,
    scheduler_kwargs: dict,
    decide=None,
    before_tasks=None,
    params: dict | None = None,
    label: str | None = None,
) -> OpenedRun:
    from taskloom.engine import Scheduler

    if workflow.pools:  # shared limits: the file's [pools]
        scheduler_kwargs = {"pools": workflow.pools, **scheduler_kwargs}
    records = {rec["id"]: rec for rec in store.load_tasks()}
    in_file = workflow.fingerprints()
    missing = set(in_file) - set(records)  # a kill while the run was being set up
    removed = set(records) - set(in_file)  # the file changed since
    finished = not missing and all(_done(rec) for rec in records.values())
    labels = store.run_labels()
    other = labels.get(store.run) if records else None  # what the stored run is
    if records and other != label:  # another kind of run: never resumed as this one
        left = None if finished else (store.run, other or "the workflow's own run")
        fresh = True
    else:
        left = None
    stored = json.loads(store.meta(DEFINITIONS_KEY) or "{}")
    changed = sorted(tid for tid in records if tid in in_file and stored.get(tid) != in_file[tid])
    # The file is the truth for definitions too: a row that keeps a definition the file
    # does not have is an edit applied in a window and never saved (Discard, a crash).
    unsaved = _unsaved_edits(workflow, records, in_file, changed)
    kept = [tid for tid in changed if _done(records[tid], "succeeded")]
    unsaved_kept = [tid for tid in unsaved if _done(records[tid], "succeeded")]
    if records and not (fresh or finished) and decide is not None:
        differences = RunDifferences(
            added=tuple(sorted(missing)),
            removed=tuple(sorted(removed)),
            changed=tuple(changed),
            kept=tuple(kept),
            done=sum(1 for rec in records.values() if _done(rec)),
            total=len(records),
        )
        # A run missing a task of the file cannot be resumed: the person is told so.
        if differences and not decide(differences) and not removed:
            fresh = True
    if records and not (fresh or removed or finished):
        redo = _with_skipped_downstream(
            workflow,
            records,
            [tid for tid in [*changed, *unsaved] if tid not in kept and tid not in unsaved_kept],
        )
        if redo:
            store.forget_tasks(redo, time.time(), REDEFINED)
        kept_params = json.loads(store.meta(PARAMS_KEY) or "{}")
        env = run_env(store.run, kept_params)
        scheduler = Scheduler(store=store, **scheduler_kwargs, env=env)
        if before_tasks is not None:
            before_tasks(scheduler)
        workflow.schedule_into(scheduler, skip=set(records) - set(redo))
        for tid in unsaved_kept:  # its success stays; its definition is the file's again
            scheduler.update(tid, workflow.tasks[tid].with_deps(workflow.tasks[tid].deps, tid))
        store.set_meta(DEFINITIONS_KEY, json.dumps(in_file))
        done = sum(1 for tid, rec in records.items() if _done(rec) and tid not in redo)
        what = "run" if label is None else label
        note = f"resuming the unfinished {what} in {store.path}: "
        note += f"{done} of {len(in_file)} tasks done"
        redefined = [tid for tid in changed if tid not in kept]
        if redefined:
            note += f"; changed in the file, run as it says now: {', '.join(redefined)}"
        if kept:
            note += f"; changed after they succeeded, kept: {', '.join(kept)}"
        if unsaved:
            note += f"; edits never saved to the file dropped: {', '.join(unsaved)}"
        if params is not None and params != kept_params:
            said = " ".join(f"{k}={v}" for k, v in kept_params.items()) or "none"
            note += f"; it keeps the params it started with ({said}): --fresh to change them"
        return OpenedRun(scheduler, store, True, note, tuple(redefined), kept_params, env)
    if records:
        store.new_run()
    if label is not None or store.run in labels:
        if label is None:
            labels.pop(store.run, None)
        else:
            labels[store.run] = label
        store.set_meta(RUN_LABELS_KEY, json.dumps({str(k): v for k, v in labels.items()}))
    params = dict(params or {})
    store.set_meta(PARAMS_KEY, json.dumps(params))
    env = run_env(store.run, params)
    scheduler = Scheduler(store=store, **scheduler_kwargs, env=env)
    if before_tasks is not None:
        before_tasks(scheduler)
    workflow.schedule_into(scheduler)
    store.set_meta(DEFINITIONS_KEY, json.dumps(in_file))
    note = f"run {store.run} of {workflow.name} in {store.path}"
    if label is not None:
        note = f"run {store.run} of {workflow.name}, {label}, in {store.path}"
    if params:
        note += " with " + " ".join(f"{k}={v}" for k, v in params.items())
    if left is not None:  # e.g. an interrupted backfill: not resumed as the workflow's run
        note += f"; run {left[0]} ({left[1]}) did not finish and is left as it is"
    return OpenedRun(scheduler, store, False, note, (), params, env)


def _unsaved_edits(workflow, records: dict, in_file: dict, changed) -> list[str]:
    """Stored tasks the file did not change whose row keeps another definition: an edit
    a window applied to the run (``Scheduler.update`` writes the row) and never saved.
    A resume defines them as the file says."""
    from taskloom.engine.definitions import TaskDefinition

    base = workflow.base_dir
    unsaved = []
    for tid, rec in records.items():
        if tid not in in_file or tid in changed:
            continue
        try:
            row = TaskDefinition.from_row(tid, rec["spec"]).fingerprint(base)
        except (KeyError, TypeError, ValueError):
            continue  # a row this version cannot read back: the fingerprints decide
        if row != in_file[tid]:
            unsaved.append(tid)
    return unsaved


def _done(record: dict, *states: str) -> bool:
    """A stored one-shot task that settled (in one of ``states``, if given)."""
    from taskloom.engine.states import SETTLED

    spec = record["spec"]
    if "every" in spec or "cron" in spec:
        return False
    return record["state"] in (states or {state.value for state in SETTLED})


def _with_skipped_downstream(workflow, records: dict, roots: list[str]) -> list[str]:
    """``roots`` and every task downstream of them that was SKIPPED (because of them,
    maybe): defined anew, they get their chance once their upstream runs again."""
    dependents: dict[str, list[str]] = {}
    for tid, task in workflow.tasks.items():
        for dep in task.deps:
            dependents.setdefault(dep, []).append(tid)
    result = list(dict.fromkeys(roots))
    seen = set(result)
    stack = list(result)
    while stack:
        for child in dependents.get(stack.pop(), ()):
            rec = records.get(child)
            if child not in seen and rec is not None and rec["state"] == "skipped":
                seen.add(child)
                result.append(child)
                stack.append(child)
    return result


PRUNE_INTERVAL = 60.0  # seconds between prunes of a running run's own history


class AttemptPruner:
    """Keeps a long run's store bounded: every ``interval`` seconds, and once more at
    ``stop()``, each task keeps its last ``keep`` attempts (and their events and log
    files) of the current run (``SQLiteStore.prune_attempts``)."""

    def __init__(self, store, keep: int, log_dir=None, interval: float = PRUNE_INTERVAL):
        import threading

        self.store, self.keep, self.log_dir, self.interval = store, keep, log_dir, interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="taskloom-prune", daemon=True)

    def start(self) -> AttemptPruner:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval):
            self.prune()

    def prune(self) -> int:
        """One prune now; how many log files it deleted. A failing store is left alone
        (the run reports its failure), and a prune that fails is logged, not raised."""
        if self.store.failed:
            return 0
        try:
            return delete_logs(self.store.prune_attempts(self.keep), self.log_dir)
        except Exception as exc:  # the run goes on; its store only grows a while longer
            import logging

            logging.getLogger("taskloom.cli").warning("pruning old attempts failed: %s", exc)
            return 0

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()
        self.prune()


DEADLINE_KEY = "deadline"  # store meta: {"run": N, "started": epoch} of a run with a timeout


def run_deadline(workflow, reader) -> float | None:
    """When the run's ``[workflow] timeout`` passes (wall time), as its owner counts it:
    from the run's first start, kept in the store by ``start_deadline``. None without
    a timeout, or before the run has started (its deadline counts from its start)."""
    if workflow.timeout is None:
        return None
    try:
        stored = json.loads(reader.meta(DEADLINE_KEY) or "null")
    except ValueError:
        return None
    if not isinstance(stored, dict) or stored.get("run") != reader.run:
        return None
    started = stored.get("started")
    return float(started) + workflow.timeout if isinstance(started, (int, float)) else None


def start_deadline(workflow, scheduler, store, hooks=None):
    """Arm the run's ``[workflow] timeout`` (engine/deadline.py); None without one.
    It counts from the run's first start, kept in the store's meta, so a resumed run
    keeps the deadline it had. When it passes, ``hooks`` (a ``HookRunner``) tell
    ``on_failure`` why, for each task it cancelled."""
    if workflow.timeout is None:
        return None
    from taskloom.engine.deadline import RunDeadline

    run, now = getattr(store, "run", None), time.time()
    started = now
    if store is not None:
        try:
            stored = json.loads(store.meta(DEADLINE_KEY) or "null")
        except ValueError:
            stored = None
        if isinstance(stored, dict) and stored.get("run") == run:
            started = float(stored.get("started", now))
        else:
            store.set_meta(DEADLINE_KEY, json.dumps({"run": run, "started": now}))

    def expired(reason: str, cancelled: list[str]) -> None:
        import logging

        logging.getLogger("taskloom.cli").warning(
            "%s: cancelled %s", reason, ", ".join(cancelled) or "nothing"
        )
        if hooks is not None:
            hooks.deadline_passed(reason, cancelled)

    deadline = RunDeadline(
        scheduler,
        workflow.timeout,
        elapsed=max(0.0, now - started),
        on_expired=expired,
        on_expiring=None if hooks is None else hooks.deadline_passing,
    )
    return deadline.start()


def take_secrets(workflow) -> str | None:
    """Read the workflow's ``secret_env`` values from this process's environment,
    give them to its commands as read now and mask them in every command's output
    (engine/secret_env.py); the values stay in memory only. Returns the problem line
    when one is not set (None: all are), with the place the first missing name is
    given: ``flow.toml:3:1: workflow.secret_env: API_TOKEN is not set in Taskloom's
    environment``."""
    from taskloom.engine.secret_env import MissingSecrets, provide, read_secrets

    try:
        values = read_secrets(workflow.secret_names())
    except MissingSecrets as exc:
        first = exc.names[0]
        task = next((t for t, names in workflow.task_secrets.items() if first in names), None)
        if first in workflow.secret_env:
            task = None
        key = "secret_env" if task is not None else "workflow.secret_env"
        where = f"tasks.{task}.secret_env" if task is not None else key
        place = str(workflow.path) if workflow.path is not None else "<workflow>"
        if workflow.path is not None:
            from taskloom.engine.workflow_text import locate

            try:
                found = locate(workflow.path.read_text(encoding="utf-8"), task, key)
            except (OSError, UnicodeDecodeError):
                found = None
            if found is not None:
                place += f":{found[0]}:{found[1]}"
        names = ", ".join(exc.names)
        verb = "is" if len(exc.names) == 1 else "are"
        return f"{place}: {where}: {names} {verb} not set in Taskloom's environment"
    provide(values)
    return None
