"""Hooks of the process that owns a run: commands and notifications when tasks fail,
retry or succeed, and when the run finishes.

``attach_hooks(scheduler, workflow, ...)`` is called by whoever assembles an owner
(``taskloom run`` and the window); it returns None when the workflow asks for
nothing, else a ``HookRunner`` that is already listening. The owner calls
``finish(outcome)`` once the run is over and ``close()`` before it exits.

Nothing here runs on the engine's threads: the listener only classifies an event
and puts it on a bounded queue (a full queue drops the event and logs it), and one
thread of the runner carries each out in turn. A hook is a command (a string run
by ``/bin/sh -c``, or an argv list) started in its own process group in the
workflow's folder, told what happened in ``TASKLOOM_*`` variables and as one JSON
document on its stdin (``payload``); one that fails is logged, one that outlives
``hook_timeout`` is ended (SIGTERM, then SIGKILL) and logged. The ready-made sinks
(``[workflow.notify]``) get the same events: a desktop notification through the
session bus (``dbus_notify``) and an HTTP POST of the same JSON. Nothing a hook or
sink does changes the run.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from datetime import datetime
from pathlib import Path

from taskloom.engine.clock import iso_time
from taskloom.engine.hooks import HookSettings

log = logging.getLogger("taskloom.hooks")

VERSION = 1  # of the JSON a hook reads; a removed or renamed key raises it
QUEUE_SIZE = 1000  # events waiting for the hook thread; more are dropped (and logged)
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL for a hook past its timeout
MAX_ERROR = 4000  # characters of an error passed on
_STOP = object()


def classify(event) -> str | None:
    """The hook event an engine event stands for: "failure" (a task failed for good),
    "retry" (an attempt failed and another will come), "success", or None."""
    outcome = event.outcome
    if outcome == "failed":
        return "failure" if event.kind == "failed" else "retry"
    if outcome == "succeeded":
        return "success"
    return None


def attach_hooks(scheduler, workflow, store=None, *, log_dir=None, env=None):
    """Listen to ``scheduler`` for ``workflow``'s hooks; None when it has none.
    ``store`` gives the run number, ``log_dir`` receives ``hooks.log`` (the hooks'
    output), ``env`` (the run's params) is passed to every hook."""
    settings: HookSettings = workflow.hooks
    if settings.empty:
        return None
    runner = HookRunner(scheduler, workflow, store, log_dir=log_dir, env=env)
    scheduler.subscribe(runner.on_event)
    runner.seed(scheduler.tasks())
    return runner.start()


class HookRunner:
    """One thread that runs a workflow's hooks and sinks, in order, each bounded."""

    def __init__(self, scheduler, workflow, store=None, *, log_dir=None, env=None):
        self.scheduler = scheduler
        self.workflow = workflow
        self.settings: HookSettings = workflow.hooks
        self.store = store
        self.log_file = None if log_dir is None else Path(log_dir) / "hooks.log"
        self.env = dict(env or {})
        self.queue: queue.Queue = queue.Queue(QUEUE_SIZE)
        self.dropped = 0
        # (hook, task, exit code) of the last hooks run, for tests and debugging
        self.ran: deque[tuple[str, str, int | None]] = deque(maxlen=100)
        self._thread = threading.Thread(target=self._loop, name="taskloom-hooks", daemon=True)
        self._skip_tasks_after: float | None = None
        self.reason: str | None = None  # why the run failed, if not a task (its deadline)
        self._finished = False
        # A run with no recurring task is over once every task has settled: on_finish
        # then runs at once (the window stays open). Else the owner says when.
        self._lock = threading.Lock()
        self._watch = not any(task.recurring for task in workflow.tasks.values())
        self._unsettled: set[str] = set()

    def start(self) -> HookRunner:
        self._thread.start()
        return self

    def seed(self, infos) -> None:
        """The tasks' states when it began listening (a resumed run's too)."""
        with self._lock:
            self._unsettled.update(info.id for info in infos if not info.state.settled)
        self._check_settled()

    # -- on the engine's delivery thread: classify and queue, nothing more
    def on_event(self, event) -> None:
        if self._watch and event.task_id and event.state is not None:
            with self._lock:
                if event.state.settled or event.kind == "removed":
                    self._unsettled.discard(event.task_id)
                else:
                    self._unsettled.add(event.task_id)
        kind = classify(event)
        if kind is not None and self._wanted(kind, event.task_id):
            self._put((kind, event))
        if self._watch and event.state is not None and event.state.settled:
            self._check_settled()

    def _check_settled(self) -> None:
        if not self._watch or self._finished:
            return
        with self._lock:
            if self._unsettled:
                return
        states = {info.state.name for info in self.scheduler.tasks()}
        if states == {"SUCCEEDED"}:
            self.finish("succeeded")
        elif "FAILED" in states:
            self.finish("failed")
        elif states:
            self.finish("cancelled")

    def _put(self, item) -> None:
        try:
            self.queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 100 == 0:
                log.warning("hooks: %d events dropped (the hook queue is full)", self.dropped)

    def _wanted(self, kind: str, task: str | None) -> bool:
        return self.settings.command_for(kind, task) is not None or self.settings.sinks_for(kind)

    # -- the owner
    def finish(self, outcome: str, summary: dict | None = None) -> None:
        """The run is over (``outcome``: "succeeded", "failed", "cancelled",
        "unfinished", "interrupted" or "stopped"): queue ``on_finish`` and the sinks'
        "finish". Once only: a run with no recurring task calls it itself once every
        task has settled."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        if self._wanted("finish", None):
            self._put(("finish", (outcome, summary)))

    def deadline_passing(self, reason: str) -> None:
        """The run's deadline passed: it has failed, whatever its tasks end as."""
        self.reason = reason

    def deadline_passed(self, reason: str, tasks) -> None:
        """The run's deadline (``[workflow] timeout``) passed and ``tasks`` were
        cancelled for it: ``on_failure`` (each task's own, else the workflow's) and
        the failure sinks are told, with ``reason`` as the error; ``on_finish`` gets
        it as ``reason``."""
        self.reason = reason
        for tid in tasks:
            if self._wanted("failure", tid):
                self._put(("deadline", (reason, tid)))

    def close(self, wait: float | None = None) -> bool:
        """Stop after what is queued; task hooks not begun within ``wait`` seconds
        (default: the hook timeout) are skipped, ``on_finish`` still runs. True once
        the thread has ended."""
        limit = self.settings.timeout if wait is None else wait
        self._skip_tasks_after = time.monotonic() + limit
        self.queue.put(_STOP)
        self._thread.join(limit + self.settings.timeout + KILL_GRACE + 5)
        return not self._thread.is_alive()

    # -- the hook thread
    def _loop(self) -> None:
        while True:
            item = self.queue.get()
            if item is _STOP:
                return
            kind, data = item
            try:
                if kind == "finish":
                    payload = self.finish_payload(*data)
                elif kind == "deadline":
                    payload = self.deadline_payload(*data)
                else:
                    late = self._skip_tasks_after
                    if late is not None and time.monotonic() > late:
                        log.warning("hooks: on_%s of %s skipped: the run ended", kind, data.task_id)
                        continue
                    payload = self.task_payload(kind, data)
                self.deliver(payload)
            except Exception:  # a hook must never end the thread (nor the run)
                log.exception("hooks: on_%s failed", kind)

    def deliver(self, payload: dict) -> None:
        kind, task = payload["event"], payload["task"]
        command = self.settings.command_for(kind, task)
        if command is not None:
            self.run_command(command, payload)
        if self.settings.sinks_for(kind):
            if self.settings.webhook is not None:
                post_webhook(self.settings.webhook, payload, self.settings.timeout)
            if self.settings.desktop:
                notify_desktop(payload, self.settings.timeout)

    def run_number(self) -> int | None:
        return None if self.store is None else self.store.run

    def task_payload(self, kind: str, event) -> dict:
        tid = event.task_id
        record = None
        try:
            record = next(
                (a for a in reversed(self.scheduler.attempts(tid)) if a.number == event.attempt),
                None,
            )
            scheduled = self.scheduler.scheduled_at(tid)
        except KeyError:  # removed since
            scheduled = None
        if scheduled is None and record is not None:  # a task with no time: its start
            started = time.time() - (self.scheduler.clock.now() - record.started)
            scheduled = datetime.fromtimestamp(started)
        error = event.error or (record.error if record is not None else None)
        return self._base(
            kind,
            task=tid,
            attempt=event.attempt,
            outcome=str(event.outcome),
            error=None if error is None else error[:MAX_ERROR],
            exit_code=None if record is None else record.exit_code,
            log_path=None if record is None else record.log_path,
            scheduled_at=None if scheduled is None else _iso(scheduled),
        )

    def deadline_payload(self, reason: str, tid: str) -> dict:
        try:
            scheduled = self.scheduler.scheduled_at(tid)
        except KeyError:
            scheduled = None
        return self._base(
            "failure",
            task=tid,
            attempt=None,
            outcome="cancelled",
            error=reason[:MAX_ERROR],
            exit_code=None,
            log_path=None,
            scheduled_at=None if scheduled is None else _iso(scheduled),
        )

    def finish_payload(self, outcome: str, summary: dict | None) -> dict:
        if self.reason is not None:  # its deadline passed: the run failed
            outcome = "failed"
        counts: dict[str, int] = {}
        failed = []
        for info in self.scheduler.tasks():
            state = info.state.name.lower()
            counts[state] = counts.get(state, 0) + 1
            if state == "failed":
                failed.append(info.id)
        payload = self._base(
            "finish",
            task=None,
            attempt=None,
            outcome=outcome,
            error=None,
            exit_code=None,
            log_path=None,
            scheduled_at=None,
        )
        payload["counts"] = counts
        payload["failed"] = failed
        if self.reason is not None:
            payload["reason"] = payload["error"] = self.reason
        if summary:
            payload.update(summary)
        return payload

    def _base(self, kind: str, **fields) -> dict:
        return {
            "version": VERSION,
            "event": kind,
            "workflow": self.workflow.name,
            "file": None if self.workflow.path is None else str(self.workflow.path.resolve()),
            "run": self.run_number(),
            **fields,
            "at": _iso(datetime.now()),
        }

    def run_command(self, command, payload: dict) -> int | None:
        """Run one hook with ``payload``; its exit code (None: could not start, or
        ended after its timeout). Failures are logged, never raised."""
        kind, task = payload["event"], payload["task"]
        name = f"on_{kind}" + (f" of {task}" if task else "")
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        env = {**os.environ, **self.env, **hook_env(payload)}
        data = (json.dumps(payload) + "\n").encode()
        out = self._output()
        from taskloom.engine import secret_env

        # With secrets (secret_env) to mask, the hook's output passes through us and is
        # written masked once it ends (bounded by hook_timeout); else straight to the log.
        capture = bool(secret_env.masked()) and out is not subprocess.DEVNULL
        try:
            process = subprocess.Popen(
                argv,
                cwd=str(self.workflow.base_dir),
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE if capture else out,
                stderr=subprocess.STDOUT if out is not subprocess.DEVNULL else out,
                start_new_session=True,  # its own group: a timeout ends all of it
            )
        except OSError as exc:
            log.warning("hook %s could not start: %s", name, exc.strerror or exc)
            self.ran.append((name, task or "", None))
            if capture:
                out.close()
            return None
        finally:
            if out is not subprocess.DEVNULL and not capture:
                out.close()
        code: int | None
        captured = b""
        try:
            captured = process.communicate(data, timeout=self.settings.timeout)[0] or b""
            code = process.returncode
        except subprocess.TimeoutExpired:
            _end_group(process)
            if capture:
                captured = process.communicate()[0] or b""
            log.warning(
                "hook %s ran past its %gs timeout (hook_timeout): ended",
                name,
                self.settings.timeout,
            )
            code = None
        except OSError as exc:  # it closed its stdin early: still wait for it, bounded
            log.debug("hook %s: %s", name, exc)
            try:
                if capture:
                    captured = process.communicate(timeout=self.settings.timeout)[0] or b""
                    code = process.returncode
                else:
                    code = process.wait(self.settings.timeout)
            except subprocess.TimeoutExpired:
                _end_group(process)
                code = None
        if capture:
            with out:
                text = captured.decode("utf-8", "replace")
                out.write(secret_env.redact(text).encode())
        if code not in (0, None):
            log.warning("hook %s failed: exit code %d", name, code)
        self.ran.append((name, task or "", code))
        return code

    def _output(self):
        if self.log_file is None:
            return subprocess.DEVNULL
        try:
            return open(self.log_file, "ab")
        except OSError:
            return subprocess.DEVNULL


def hook_env(payload: dict) -> dict[str, str]:
    """The ``TASKLOOM_*`` variables a hook sees: the payload's fields that are set."""
    names = {
        "event": "TASKLOOM_HOOK_EVENT",
        "workflow": "TASKLOOM_WORKFLOW",
        "run": "TASKLOOM_RUN",
        "task": "TASKLOOM_TASK",
        "attempt": "TASKLOOM_ATTEMPT",
        "outcome": "TASKLOOM_OUTCOME",
        "error": "TASKLOOM_ERROR",
        "exit_code": "TASKLOOM_EXIT_CODE",
        "log_path": "TASKLOOM_LOG_PATH",
        "scheduled_at": "TASKLOOM_SCHEDULED_AT",
    }
    env = {}
    for key, name in names.items():
        value = payload.get(key)
        if value is not None:
            env[name] = str(value).replace("\0", "")
    return env


def _end_group(process: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(wait)
            if sig == signal.SIGTERM:
                try:  # what it left in its group
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            return
        except subprocess.TimeoutExpired:
            continue


def _iso(moment: datetime) -> str:
    return iso_time(moment.timestamp())


# ---------------------------------------------------------------------- the sinks
def post_webhook(url: str, payload: dict, timeout: float) -> bool:
    """POST the payload as JSON to ``url``; False (logged) when it did not take it."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "taskloom-hooks"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(65536)
        return True
    except urllib.error.HTTPError as exc:
        log.warning("webhook %s answered %d %s", url, exc.code, exc.reason)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        log.warning("webhook %s failed: %s", url, reason)
    return False


def notification_text(payload: dict) -> tuple[str, str, str]:
    """(summary, body, urgency) of a desktop notification for a payload."""
    name, run = payload["workflow"], payload.get("run")
    where = f"{name} run {run}" if run is not None else name
    kind = payload["event"]
    if kind == "finish":
        counts = payload.get("counts", {})
        said = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        outcome = payload["outcome"]
        urgency = "normal" if outcome == "succeeded" else "critical"
        return f"{where} {outcome}", said, urgency
    task, attempt = payload["task"], payload["attempt"]
    error = payload.get("error") or ""
    verb = {"failure": "failed", "retry": "failed, will retry", "success": "succeeded"}[kind]
    body = where + (f", attempt {attempt}" if attempt is not None else "")
    body += f": {error}" if error else ""
    return f"{task} {verb}", body, "critical" if kind == "failure" else "normal"


def notify_desktop(payload: dict, timeout: float) -> bool:
    """A desktop notification through the session bus; False (logged) without one."""
    from taskloom import resources_dir
    from taskloom.dbus_notify import NotifyError, notify

    summary, body, urgency = notification_text(payload)
    try:
        notify(
            summary,
            body,
            urgency=urgency,
            icon=str(resources_dir() / "icons" / "app.svg"),
            timeout=timeout,
        )
        return True
    except NotifyError as exc:
        log.warning("desktop notification not shown: %s", exc)
        return False
