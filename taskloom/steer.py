"""``taskloom status`` and the steering commands (``retry``, ``cancel``, ``pause``,
``resume``, ``run-now``, ``clear``): a workflow's run seen and steered from the shell.

Whose run it is decides how:

- **A live owner** (a ``taskloom run`` or a window elsewhere holds the store): the
  run is read as a watching window reads it (``WatchedRun``: the owner's feed, the
  store read-only), and a request goes through the same control table a window's
  buttons use; the command waits for the owner's answer (``--timeout``).
- **No owner** (the run was stopped, killed, or ended): ``status`` reads the store
  read-only; a request opens the store as its owner, restores the run into a
  ``Scheduler`` that is never started, applies the request through the engine's
  own calls (the same checks as in a live run), and closes it. The next start of
  the workflow resumes the run and carries the change out.

Exit codes (README "Exit codes"): 0 done; 1 the run refused the request (the task
is in a state that does not allow it: one line says which and what would); 2 a
bad file, an unknown task, an unusable store, usage; 75 the owner did not answer
in time (try again).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskloom import human

if TYPE_CHECKING:
    from collections.abc import Callable

    from taskloom.engine._store.lock import Owner
    from taskloom.engine.run_api import RunInterface

EXIT_OK, EXIT_REFUSED, EXIT_INVALID, EXIT_BUSY = 0, 1, 2, 75
JSON_VERSION = 1
ANSWER_TIMEOUT = 10.0  # seconds to wait for a live owner's answer (--timeout)
FAILURES_SHOWN = 5
NEXT_SHOWN = 5

# command word -> (control action, verb in messages)
STEERING = {
    "retry": "retry",
    "cancel": "cancel",
    "pause": "pause",
    "resume": "resume",
    "run-now": "run_now",
    "clear": "clear",
}
# Why a task's state refuses a request, said the same way for a live and a stored run.
NEEDS = {
    "retry": "only a failed, skipped or cancelled task can be retried",
    "cancel": "only a task that has not finished can be cancelled",
    "run_now": "only a task waiting for its time (or a recurring one) can run now",
    "clear": "only a finished one-shot task can be cleared",
    "pause": "it is paused already",
    "resume": "it is not paused",
}


def _say(text: str, quiet: bool = False) -> None:
    if not quiet:
        print(text, flush=True)


def _fail(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _open_file(args):
    """(workflow, store path), or an exit code after one line saying why not."""
    from taskloom.engine.workflow import WorkflowError, load

    from .runs import default_db_path

    try:
        workflow = load(args.file)
    except WorkflowError as exc:
        _fail(str(exc))
        return None, EXIT_INVALID
    if args.db:
        return (workflow, Path(args.db)), EXIT_OK
    from taskloom.engine.store import workflow_owner

    # The file may be run now on another store (another --db, cron's data folder):
    # its owner's lock names that store.
    owner = workflow_owner(workflow.path) if workflow.path is not None else None
    store = Path(owner.store) if owner is not None and owner.store else None
    return (workflow, store or default_db_path(workflow)), EXIT_OK


# ---------------------------------------------------------------------- what is seen
@dataclass
class TaskView:
    id: str
    state: str
    attempt: int
    paused: bool
    error: str | None
    recurring: bool
    next: float | None  # wall time of its next start, if it waits for one


@dataclass
class RunView:
    """A run as ``status`` shows it, from a live owner's feed or from the store."""

    workflow: str
    file: str
    store: str
    run: int
    owner: Owner | None
    live: bool
    paused: bool
    tasks: list[TaskView]
    running: list[dict] = field(default_factory=list)  # task, attempt, started (wall)
    failures: list[dict] = field(default_factory=list)  # newest first
    upcoming: list[dict] = field(default_factory=list)  # task, at (wall), kind
    # With no owner: each task it left running, and what its command's supervisor says
    # (still running, or its end: the next start adopts it), else it runs again.
    left_running: list[dict] = field(default_factory=list)  # task, outcome, started
    # Shared limits that hold ready tasks back: pool, busy, limit, waiting task ids.
    pool_waits: list[dict] = field(default_factory=list)
    label: str | None = None  # a run not the workflow's own: "backfill 2026-11-01 to ..."
    deadline: float | None = None  # wall time its [workflow] timeout passes, if it has one
    timeout: float | None = None  # that [workflow] timeout (seconds)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for task in self.tasks:
            counts[task.state] = counts.get(task.state, 0) + 1
        return counts


def pool_waits(workflow, states: dict[str, str]) -> list[dict]:
    """The file's pools whose every slot is taken while some of their tasks are ready:
    ``{"pool", "busy", "limit", "waiting"}`` each (``states``: task id -> state)."""
    found = []
    for name, limit in getattr(workflow, "pools", {}).items():
        members = [tid for tid, task in workflow.tasks.items() if task.pool == name]
        busy = sum(states.get(tid) == "running" for tid in members)
        waiting = [tid for tid in members if states.get(tid) == "ready"]
        if waiting and busy >= limit:
            found.append({"pool": name, "busy": busy, "limit": limit, "waiting": waiting})
    return found


def _zones(workflow) -> dict[str, str | None]:
    """Each cron task's zone: its next fire reads best in it ("02:30 (Asia/Tokyo)")."""
    return {
        tid: (task.timezone or "UTC") if task.cron else None for tid, task in workflow.tasks.items()
    }


def _failures(reader, run: int) -> list[dict]:
    failed = reader.attempts(limit=FAILURES_SHOWN, run=run, outcomes=("failed", "lost"))
    return [
        {
            "task": r["task_id"],
            "attempt": r["number"],
            "ended": r["ended"],
            "outcome": r["outcome"],
            "error": r["error"],
            "exit_code": r["exit_code"],
            "log_path": r["log_path"],
        }
        for r in failed
    ]


def _live_view(watched, workflow, db_path: Path, reader) -> RunView:
    offset = watched.clock.offset  # wall = owner clock + offset
    infos = watched.tasks()
    upcoming = watched.upcoming(50)
    first: dict[str, float] = {}
    for entry in upcoming:
        first.setdefault(entry.task_id, entry.run_at + offset)
    tasks = [
        TaskView(i.id, i.state.value, i.attempt, i.paused, i.error, i.recurring, first.get(i.id))
        for i in infos
    ]
    running = []
    for info in infos:
        if info.state.value != "running":
            continue
        started = None
        for attempt in reversed(watched.attempts(info.id)):
            if attempt.ended is None:
                started = attempt.started + offset
                break
        running.append({"task": info.id, "attempt": info.attempt, "started": started})
    return RunView(
        workflow.name,
        str(workflow.path),
        str(db_path),
        watched.run,
        watched.owner,
        True,
        watched.paused,
        tasks,
        running,
        _failures(reader, watched.run),
        [
            {"task": e.task_id, "at": e.run_at + offset, "kind": e.kind}
            for e in upcoming[:NEXT_SHOWN]
        ],
    )


def _stored_view(workflow, db_path: Path, reader) -> RunView:
    tasks = []
    for rec in reader.load_tasks():
        spec = rec["spec"]
        recurring = "every" in spec or "cron" in spec
        waits = rec["state"] in ("scheduled", "retry_wait") or (
            recurring and rec["state"] not in ("running", "cancelled")
        )
        tasks.append(
            TaskView(
                rec["id"],
                rec["state"],
                rec["attempt"],
                bool(rec["paused"]),
                rec["error"],
                recurring,
                rec["next_wall"] if waits else None,
            )
        )
    upcoming = sorted(
        ({"task": t.id, "at": t.next, "kind": "recurring" if t.recurring else t.state}
         for t in tasks if t.next is not None),
        key=_at,
    )  # fmt: skip
    left_running = []
    for task in tasks:
        if task.state == "running":
            rows = reader.attempts(task.id, limit=1)  # with what a supervisor recorded
            newest = rows[0] if rows else {}
            supervised = "supervisor" in (newest.get("error") or "") or (
                newest.get("outcome") not in (None, "running")
            )
            left_running.append({
                "task": task.id,
                "outcome": newest.get("outcome") if supervised else None,
                "started": newest.get("started"),
            })  # fmt: skip
    return RunView(
        workflow.name,
        str(workflow.path),
        str(db_path),
        reader.run,
        None,
        False,
        False,
        tasks,
        [],
        _failures(reader, reader.run),
        upcoming[:NEXT_SHOWN],
        left_running,
    )


def _watch(db_path: Path, name: str, timeout: float | None = None):
    """A ``WatchedRun`` on the live owner's run, or None if nobody owns the store.
    ``StoreBusy`` when an owner holds it but does not publish its run within
    ``timeout`` (stopped, hung, or an older Taskloom)."""
    from taskloom.engine.watched_run import ATTACH_TIMEOUT, OwnerGone, WatchedRun

    try:
        return WatchedRun(db_path, name=name, attach_timeout=timeout or ATTACH_TIMEOUT)
    except OwnerGone:
        return None


def status(args) -> int:
    from taskloom.engine.store import SQLiteStore, StoreBusy, StoreError

    opened, code = _open_file(args)
    if opened is None:
        return code
    workflow, db_path = opened
    if not db_path.exists():
        if args.json:
            _dump({"workflow": workflow.name, "file": str(workflow.path), "store": str(db_path),
                   "run": None, "owner": None, "live": False})  # fmt: skip
        else:
            _say(f"no run of {workflow.name} yet ({db_path} does not exist)", args.quiet)
        return EXIT_OK
    try:
        reader = SQLiteStore.reader(db_path)
    except StoreError as exc:
        _fail(f"taskloom status: {exc}")
        return EXIT_INVALID
    try:
        try:
            watched = _watch(db_path, workflow.name)
        except StoreBusy as exc:
            _fail(f"taskloom status: {exc}")
            return EXIT_BUSY
        try:
            if watched is not None:
                view = _live_view(watched, workflow, db_path, reader)
            else:
                view = _stored_view(workflow, db_path, reader)
        finally:
            if watched is not None:
                watched.close()
        labels = reader.run_labels()
        from .runs import run_deadline

        view.deadline, view.timeout = run_deadline(workflow, reader), workflow.timeout
    except StoreError as exc:
        _fail(f"taskloom status: {exc}")
        return EXIT_INVALID
    finally:
        reader.close()
    view.pool_waits = pool_waits(workflow, {t.id: t.state for t in view.tasks})
    view.label = labels.get(view.run)
    now = time.time()
    if args.json:
        _dump(_view_json(view, now))
    else:
        for line in _view_lines(view, _zones(workflow), now):
            print(line)
    return EXIT_OK


def _dump(document: dict) -> None:
    print(json.dumps({"version": JSON_VERSION, **document}, indent=2, ensure_ascii=False))


def _owner_json(owner) -> dict | None:
    if owner is None:
        return None
    return {
        "program": owner.program,
        "pid": owner.pid,
        "host": owner.host,
        "since": human.iso(owner.since),
    }


def _view_json(view: RunView, now: float) -> dict:
    return {
        "workflow": view.workflow,
        "file": view.file,
        "store": view.store,
        "run": view.run,
        "run_label": view.label,
        "owner": _owner_json(view.owner),
        "live": view.live,
        "paused": view.paused,
        "counts": view.counts(),
        "tasks": [
            {
                "id": t.id,
                "state": t.state,
                "attempt": t.attempt,
                "paused": t.paused,
                "error": t.error,
                "recurring": t.recurring,
                "next": human.iso(t.next),
            }
            for t in view.tasks
        ],
        "running": [
            {
                "task": r["task"],
                "attempt": r["attempt"],
                "started": human.iso(r["started"]),
                "elapsed": None if r["started"] is None else round(now - r["started"], 3),
            }
            for r in view.running
        ],
        "failures": [{**f, "ended": human.iso(f["ended"])} for f in view.failures],
        "pool_waits": view.pool_waits,
        "deadline": human.iso(view.deadline),
        "next": [
            {
                "task": e["task"],
                "at": human.iso(e["at"]),
                "in": round(e["at"] - now, 3),
                "kind": e["kind"],
            }
            for e in view.upcoming
        ],  # fmt: skip
    }


def _at(entry: dict[str, Any]) -> float:
    return entry["at"]


def _view_lines(view: RunView, zones: dict, now: float) -> list[str]:
    what = f"run {view.run}" + (f" ({view.label})" if view.label else "")
    lines = [f"{view.workflow}: {what} in {view.store}"]
    if view.owner is not None:
        owner = view.owner
        since = human.clock_time(owner.since, now=now)
        ago = human.duration(now - owner.since)
        lines.append(
            f"owner: {owner.program} (pid {owner.pid} on {owner.host}), since {since} "
            f"({ago} ago)" + ("; the whole run is paused" if view.paused else "")
        )
    else:
        lines.append(
            "owner: none (no process runs it now; the next 'taskloom run' resumes it"
            " unless it has finished)"
            if view.label is None
            else "owner: none (no process runs it now; the same 'taskloom backfill' resumes it"
            " unless it has finished; 'taskloom run' starts the workflow's own run)"
        )
    if view.deadline is not None and view.timeout is not None:
        from taskloom.engine.durations import format_duration

        left = view.deadline - now
        when = human.clock_time(view.deadline, now=now)
        how = f"in {human.duration(left)}" if left > 0 else "passed"
        timeout = format_duration(view.timeout)
        lines.append(f"deadline: {when} ({how}; [workflow] timeout = {timeout})")
    counts = view.counts()
    lines.append("tasks: " + (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"))
    paused = [t.id for t in view.tasks if t.paused]
    if paused:
        lines.append("paused: " + ", ".join(paused))
    if view.running:
        lines.append("running:")
        for r in view.running:
            took = "" if r["started"] is None else f" for {human.duration(now - r['started'])}"
            lines.append(f"  {r['task']}{took} (attempt {r['attempt']})")
    elif not view.live and view.left_running:
        going = [r for r in view.left_running if r["outcome"] == "running"]
        ended = [r for r in view.left_running if r["outcome"] not in (None, "running")]
        again = [r["task"] for r in view.left_running if r["outcome"] is None]
        if going:
            lines.append("still running under its supervisor (the next start adopts it):")
            for r in going:
                took = "" if r["started"] is None else f" for {human.duration(now - r['started'])}"
                lines.append(f"  {r['task']}{took}")
        for r in ended:
            lines.append(
                f"ended after its owner stopped: {r['task']} {r['outcome']} "
                "(recorded at the next start)"
            )
        if again:
            lines.append(
                "was running when its owner stopped (runs again at the next start): "
                + ", ".join(again)
            )
    for wait in view.pool_waits:
        lines.append(
            f"waiting for pool {wait['pool']}: {wait['busy']} of {wait['limit']} busy: "
            + ", ".join(wait["waiting"])
        )
    if view.failures:
        lines.append("recent failures:")
        for f in view.failures:
            when = "" if f["ended"] is None else f" at {human.clock_time(f['ended'], now=now)}"
            error = f["error"] or (
                f"exit code {f['exit_code']}" if f["exit_code"] is not None else f["outcome"]
            )
            lines.append(f"  {f['task']} attempt {f['attempt']}{when}: {error}")
            if f["log_path"]:
                lines.append(f"    log: {f['log_path']}")
    if view.upcoming:
        lines.append("next:")
        for e in view.upcoming:
            when = human.clock_time(e["at"], zones.get(e["task"]), now=now)
            ahead = e["at"] - now
            relative = f"in {human.duration(ahead)}" if ahead > 0 else "due now"
            kind = "" if e["kind"] in ("scheduled", "recurring") else f" ({e['kind']})"
            lines.append(f"  {e['task']} at {when}, {relative}{kind}")
    return lines


# ---------------------------------------------------------------------- steering
def steer(args) -> int:
    """``retry``, ``cancel``, ``pause``, ``resume``, ``run-now``, ``clear``."""
    word = args.command
    action = STEERING[word]
    tasks = list(getattr(args, "tasks", None) or [])
    if word == "retry" and getattr(args, "failed", False) and tasks:
        _fail("taskloom retry: give TASK names or --failed, not both")
        return EXIT_INVALID
    if word == "retry" and not tasks and not args.failed:
        _fail("taskloom retry: name the TASK to retry, or --failed for every failed task")
        return EXIT_INVALID
    if word in ("cancel", "run-now", "clear") and not tasks:
        _fail(f"taskloom {word}: name the TASK (one or more)")
        return EXIT_INVALID
    opened, code = _open_file(args)
    if opened is None:
        return code
    workflow, db_path = opened
    if not db_path.exists():
        _fail(f"taskloom {word}: no run of {workflow.name} is stored ({db_path} does not "
              "exist); start one with 'taskloom run FILE'")  # fmt: skip
        return EXIT_INVALID
    from taskloom.engine.store import StoreBusy

    try:
        watched = _watch(db_path, workflow.name, args.timeout)
    except StoreBusy as exc:
        _fail(f"taskloom {word}: {exc}")
        return EXIT_BUSY
    if watched is not None:
        try:
            return _steer_live(args, watched, action, tasks)
        finally:
            watched.close()
    return _steer_stored(args, workflow, db_path, action, tasks)


def _requests(args, action: str, tasks: list[str], infos: dict) -> list[tuple[str, str]] | int:
    """The (action, task) pairs to apply, or an exit code after saying why not."""
    word = args.command
    if word == "retry" and args.failed:
        failed = [tid for tid, info in infos.items() if _state(info) == "failed"]
        if not failed:
            _say(f"retry: nothing has failed in this run of {args.file}", args.quiet)
            return EXIT_OK
        tasks = failed
    unknown = [tid for tid in tasks if tid not in infos]
    if unknown:
        known = ", ".join(infos) or "none"
        _fail(f"taskloom {word}: the run has no task {unknown[0]!r} (it has: {known})")
        return EXIT_INVALID
    if word == "clear" and args.downstream:
        action = "clear_downstream"
    if not tasks:  # pause / resume the whole run
        return [(action + "_all", "")]
    return [(action, tid) for tid in tasks]


def _state(info) -> str:
    state = info.state
    return state if isinstance(state, str) else state.value


def _refusal(word: str, action: str, tid: str, info, allowed) -> str | None:
    """Why ``info``'s task cannot take ``action`` now, or None if it can. ``allowed``
    is the engine's ``allowed_actions`` for it."""
    from taskloom.engine.models import Action

    state = _state(info).replace("_", " ")
    base = action.removesuffix("_downstream")
    if base == "clear":
        if info.recurring:
            return f"{word}: task {tid!r} is recurring; {NEEDS['clear']}"
        if state not in ("succeeded", "failed", "skipped", "cancelled"):
            return f"{word}: task {tid!r} is {state}; {NEEDS['clear']}"
        return None
    if base == "pause" and info.paused or base == "resume" and not info.paused:
        return f"{word}: task {tid!r}: {NEEDS[base]}"
    if base in ("pause", "resume"):
        return None
    if Action(base) not in allowed:
        return f"{word}: task {tid!r} is {state}; {NEEDS[base]}"
    return None


def _steer_live(args, watched, action: str, tasks: list[str]) -> int:
    word = args.command
    infos = {info.id: info for info in watched.tasks()}
    requests = _requests(args, action, tasks, infos)
    if isinstance(requests, int):
        return requests
    who = f"{watched.owner.program} (pid {watched.owner.pid})"
    for name, tid in requests:
        if tid:
            refusal = _refusal(word, name, tid, infos[tid], watched.allowed_actions(tid))
            if refusal is not None:
                _fail(refusal)
                return EXIT_REFUSED
    code = EXIT_OK
    for name, tid in requests:
        try:
            watched.request(name, tid)
        except RuntimeError as exc:  # the owner stopped meanwhile
            _fail(f"taskloom {word}: {exc}")
            return EXIT_BUSY
        answer = _answer(watched, args.timeout)
        if answer is None:
            _fail(f"taskloom {word}: {who} did not answer within {human.duration(args.timeout)};"
                  " the request stays queued for a minute")  # fmt: skip
            return EXIT_BUSY
        status, text = answer
        if status == "done":
            if not name.startswith("clear"):  # the owner's words for clear name every task
                text = _done_text(name, tid)
            _say(f"{word}: {text} (done by {who})", args.quiet)
        elif status == "refused":
            _fail(f"{word}: {who} refused: {text}")
            code = EXIT_REFUSED
        else:
            _fail(f"{word}: {text}")
            return EXIT_BUSY
    return code


def _answer(watched, timeout: float) -> tuple[str, str] | None:
    """The owner's answer to our last request: (status, text), or None on timeout.
    Polled with a deadline: the answer is a row another process writes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for _rid, _action, _tid, status, text in watched.take_answers():
            return status, text
        if not watched.owner_alive:
            return "expired", "the owner stopped before it answered"
        time.sleep(0.05)
    return None


def _steer_stored(args, workflow, db_path: Path, action: str, tasks: list[str]) -> int:
    from taskloom.engine import Scheduler
    from taskloom.engine.store import SQLiteStore, StoreBusy, StoreError
    from taskloom.imports import use_workflow_folder

    word = args.command
    if not tasks and word in ("pause", "resume"):
        _fail(f"{word}: no process runs {workflow.name} now, and pausing the whole run "
              "lasts only while one does; name a TASK to pause it in the stored run")  # fmt: skip
        return EXIT_REFUSED
    use_workflow_folder(workflow, None)  # a call's module may sit beside the file
    try:
        store = SQLiteStore(db_path)
    except StoreBusy:  # a run started meanwhile: steer that one
        try:
            watched = _watch(db_path, workflow.name, args.timeout)
        except StoreBusy as exc:
            _fail(f"taskloom {word}: {exc}")
            return EXIT_BUSY
        if watched is None:
            _fail(f"taskloom {word}: {db_path} changed hands; try again")
            return EXIT_BUSY
        try:
            return _steer_live(args, watched, action, tasks)
        finally:
            watched.close()
    except StoreError as exc:
        _fail(f"taskloom {word}: {exc}")
        return EXIT_INVALID
    scheduler = None
    try:
        if not store.load_tasks():
            _fail(f"taskloom {word}: no run of {workflow.name} is stored in {db_path}")
            return EXIT_INVALID
        scheduler = Scheduler(store=store, workers=workflow.workers)  # never started
        infos = {info.id: info for info in scheduler.tasks()}
        requests = _requests(args, action, tasks, infos)
        if isinstance(requests, int):
            return requests
        for name, tid in requests:
            refusal = _refusal(word, name, tid, infos[tid], scheduler.allowed_actions(tid))
            if refusal is None and name == "run_now" and infos[tid].recurring:
                # An extra run is the live dispatcher's; the store keeps the schedule only.
                refusal = (
                    f"{word}: no process runs {workflow.name} now, and an extra run of the "
                    f"recurring task {tid!r} lasts only while one does; start the run "
                    "('taskloom run FILE') and ask again"
                )
            if refusal is not None:
                _fail(refusal)
                return EXIT_REFUSED
        ended = _end_adopted_commands(scheduler, requests)
        done = [(tid, _apply(scheduler, name, tid)) for name, tid in requests]
        if ended:
            _wait_settled(scheduler, ended)
    except (ValueError, KeyError, StoreError) as exc:
        _fail(f"taskloom {word}: {exc}")
        return EXIT_INVALID
    finally:
        try:
            if scheduler is not None:
                scheduler.shutdown(wait=True, hand_over=True)
        finally:
            store.close()
    for tid, text in done:
        if tid in ended:
            _say(
                f"{word}: {text} in the stored run {store.run}: its command was ended "
                "(it ran on under the supervisor of an owner that had stopped)",
                args.quiet,
            )
            continue
        _say(f"{word}: {text} in the stored run {store.run} (no process runs "
             f"{workflow.name} now; the next 'taskloom run {args.file}' carries it out)",
             args.quiet)  # fmt: skip
    return EXIT_OK


def _end_adopted_commands(scheduler, requests) -> set[str]:
    """Cancelling a task whose command still runs under the supervisor of a stopped
    owner must end that command now, and record it cancelled, or the next start would
    adopt it and record its success. This process owns the store for the moment:
    start the scheduler paused (nothing new starts) so that the adopted commands' ends
    are followed; ``shutdown(hand_over=True)`` leaves the others to the next owner."""
    adopted = set(scheduler.adopted_tasks())
    ended = {tid for name, tid in requests if name == "cancel" and tid in adopted}
    if ended:
        scheduler.pause()
        scheduler.start()
    return ended


def _wait_settled(scheduler, tasks: set[str], timeout: float = 30.0) -> None:
    """Until each of ``tasks`` has settled (its ended command recorded), or ``timeout``."""
    import threading

    settled = threading.Event()

    def check(_event=None) -> None:
        if all(scheduler.task(tid).state.settled for tid in tasks):
            settled.set()

    unsubscribe = scheduler.subscribe(check)
    try:
        check()
        settled.wait(timeout)
    finally:
        unsubscribe()


def _apply(scheduler: RunInterface, action: str, tid: str) -> str:
    if action in ("clear", "clear_downstream"):
        cleared = scheduler.clear(tid, downstream=action == "clear_downstream")
        return "cleared " + ", ".join(cleared)
    steer: dict[str, Callable[[str], object]] = {
        "cancel": scheduler.cancel,
        "retry": scheduler.retry,
        "run_now": scheduler.run_now,
        "pause": scheduler.pause,
        "resume": scheduler.resume,
    }
    steer[action](tid)
    return _done_text(action, tid)


def _done_text(action: str, tid: str) -> str:
    if action in ("pause_all", "resume_all"):
        return f"{action[:-4]}d the whole run"
    done = {"retry": "retried", "cancel": "cancelled", "pause": "paused", "resume": "resumed"}
    if action == "run_now":
        return f"made {tid} due now"
    return f"{done[action]} {tid}"
