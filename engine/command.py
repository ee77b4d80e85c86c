"""External commands as tasks: a real subprocess per attempt, output captured to a file.

``Command(["python3", "etl.py"], cwd="/srv/etl", env={"MODE": "full"})`` is a
callable the engine runs like any task. Each call asks this process's command
supervisor (``_jobs/supervisor.py``, a small process of its own) to start it:

- the program runs in its own session, so it and every process it starts share one
  process group that can be stopped together. Its parent is the supervisor, not
  this process: when this process dies without warning, the command goes on, and a
  run store's next owner adopts it (``_jobs/supervision.py``);
- the supervisor writes stdout and stderr into a log file in
  ``current_run().log_dir`` (else a private <user cache>/taskloom/logs): the first
  ``max_log_bytes`` in full, then a note of what was left out and the last
  ``tail_bytes``. The call sets ``run.log_path``, ``run.output`` (the tail) and
  ``run.exit_code``;
- it returns on exit code 0, else raises ``CommandFailed("exit code N: <last stderr line>")``;
- a cancel or a timeout (``run.on_cancel``) has the supervisor end the whole group:
  SIGTERM, then SIGKILL after ``GRACE_SECONDS``; so does the end of the leader, for
  whatever it left running in its group.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import stat
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ._jobs.context import RunContext, attempt_env, current_run
from .errors import CommandLost, TaskCancelled
from .secret_env import environment as secrets_env
from .secret_env import masked

if TYPE_CHECKING:  # loaded on the first command: defining tasks needs none of it
    from ._jobs import supervision

MAX_LOG_BYTES = 5 * 1024 * 1024
TAIL_BYTES = 4096
GRACE_SECONDS = 3.0


class CommandFailed(Exception):
    """The command exited non-zero, or was killed by a signal."""

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        self.exit_code = exit_code


class CommandDetached(BaseException):
    """The owner handed the command over without waiting for its end
    (``Scheduler.shutdown(hand_over=True)``): it goes on under its supervisor and the
    store's next owner records its end. Not an outcome: the attempt stays running."""


class Command:
    """A subprocess to run as a task: an argv list, or a string with ``shell=True``."""

    def __init__(self, argv, shell: bool = False, cwd=None, env=None):
        if isinstance(argv, str):
            if not shell:
                raise ValueError(
                    f"Command({argv!r}): a command string needs shell=True; "
                    "pass an argv list to run a program directly"
                )
            if not argv.strip():
                raise ValueError("Command: empty command string")
        else:
            if shell:
                raise ValueError("Command: shell=True takes a command string, not an argv list")
            argv = [os.fspath(part) for part in argv]
            if not argv or not argv[0]:
                raise ValueError("Command: empty argv")
            if not all(isinstance(part, str) for part in argv):
                raise TypeError(f"Command: argv items must be strings, got {argv!r}")
        env = dict(env or {})
        for key, value in env.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f"Command: env must map str to str, got {key!r}={value!r}")
        self.argv = argv
        self.shell = bool(shell)
        self.cwd = None if cwd is None else os.fspath(cwd)
        self.env = env

    @property
    def __name__(self) -> str:  # short name for generated task ids
        first = shlex.split(self.argv)[0] if self.shell else self.argv[0]
        return os.path.basename(first) or first

    def __call__(self):
        from ._jobs import supervision

        run = current_run()
        log_path = _new_log_path(run, self.__name__)
        # TASKLOOM_* of the attempt and the run's env (context.attempt_env), then its own.
        # Sent as the environment most commands share (sent again only when it changes)
        # and the few variables of this attempt.
        env = {**os.environ, **secrets_env(), **self.env}
        extra = {k: v for k, v in attempt_env(run).items() if k not in self.env}
        if run is not None:
            run.log_path = str(log_path)
            extra.update(_output_files(run, str(log_path)))
        request: dict = {
            "argv": self.argv,
            "shell": self.shell,
            "cwd": self.cwd,
            "env": env,
            "env_extra": extra,
            "log": str(log_path),
            "max_log_bytes": MAX_LOG_BYTES,
            "tail_bytes": TAIL_BYTES,
            "grace": GRACE_SECONDS,
        }
        secrets = masked()
        if secrets:  # secret_env values: the supervisor writes *** for each
            request["mask"] = list(secrets)
        if run is None:
            pending = supervision.client().start(request)
        else:
            if run.supervision is not None:  # with a store: recorded, adoptable by its next owner
                request.update(run.supervision)

            def started(pending: supervision.Pending) -> None:  # on the reader thread
                assert pending.pid is not None
                run.process_started(pending.pid, pending.pgid or pending.pid)

            pending = supervision.client().start(request, started)
            # A cancel before the program runs is carried out once it does.
            run.on_cancel(lambda: pending.detach() if run.detached else pending.cancel())
        pending.ended.wait()
        assert pending.end is not None
        return command_outcome(run, pending.end, self.__name__)

    def __eq__(self, other):
        if not isinstance(other, Command):
            return NotImplemented
        return (self.argv, self.shell, self.cwd, self.env) == (
            other.argv,
            other.shell,
            other.cwd,
            other.env,
        )

    def __hash__(self):
        argv = self.argv if isinstance(self.argv, str) else tuple(self.argv)
        return hash((argv, self.shell, self.cwd))

    def __repr__(self):
        extras = "".join(
            f", {name}={value!r}"
            for name, value in (("shell", self.shell), ("cwd", self.cwd), ("env", self.env))
            if value
        )
        return f"Command({self.argv!r}{extras})"


def command_outcome(run: RunContext | None, end: dict, name: str) -> None:
    """What a command's end, as its supervisor recorded it, means for its attempt:
    return on exit code 0, else raise. Shared by the owner that started the command
    and an owner that adopted it."""
    if end.get("detached"):
        raise CommandDetached(name)
    if end.get("lost"):
        raise CommandLost("lost: its supervisor was killed before the command's end was recorded")
    if run is not None and run.log_path is not None and run.inputs:
        from .outputs import inputs_path

        try:  # the dependencies' outputs were for the command only: the store keeps them
            os.unlink(inputs_path(run.log_path))
        except OSError:
            pass
    if run is not None:
        run.exit_code = end.get("rc")
        run.output = end.get("tail") or None
        run.ended_wall = end.get("at")
    error = end.get("error")
    if error:
        if error.startswith("cannot start: "):
            raise CommandFailed(f"cannot start {name!r}: {error[len('cannot start: ') :]}")
        raise CommandFailed(f"{name}: {error}")
    returncode = end.get("rc")
    if returncode == 0:
        if run is not None and run.log_path is not None:
            from .outputs import OutputError, output_path, read_outputs

            try:
                outputs = read_outputs(output_path(run.log_path))
            except OutputError as exc:
                raise CommandFailed(f"{name}: {exc}") from None
            if outputs:
                run.outputs = outputs
        return None
    assert returncode is not None
    if end.get("timed_out") and not (run is not None and run.cancelled):
        raise CommandFailed(f"timed out ({_describe_exit(returncode)})", returncode)
    if (run is not None and run.cancelled) or end.get("cancelled"):
        raise TaskCancelled(f"{name} terminated ({_describe_exit(returncode)})")
    last_line = end.get("err_line")
    message = _describe_exit(returncode) + (f": {last_line}" if last_line else "")
    raise CommandFailed(message, returncode)


def _output_files(run: RunContext, log_path: str) -> dict[str, str]:
    """``TASKLOOM_OUTPUT`` (the file the command may write its outputs to) and, when
    its dependencies gave some, ``TASKLOOM_INPUTS`` (a JSON file of them), beside its
    log (engine/outputs.py)."""
    import json

    from .outputs import INPUTS_ENV, OUTPUT_ENV, inputs_path, output_path

    files = {OUTPUT_ENV: output_path(log_path)}
    if run.inputs:
        path = inputs_path(log_path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(run.inputs, handle, ensure_ascii=False)
        files[INPUTS_ENV] = path
    return files


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def _new_log_path(run, name: str) -> Path:
    folder = Path(run.log_dir) if run is not None and run.log_dir else None
    if folder is None:
        folder = _private_log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    label = f"{run.task_id}-{run.attempt}" if run is not None else name
    label = re.sub(r"[^\w.-]+", "_", label)[:80] or "command"
    label = "_" + label[1:] if label.startswith(".") else label  # a task ".." is not hidden
    stamp = time.strftime("%Y%m%d-%H%M%S")
    handle, path = tempfile.mkstemp(prefix=f"{label}-{stamp}-", suffix=".log", dir=folder)
    os.close(handle)
    return Path(path)


def _private_log_dir() -> Path:
    """<user cache>/taskloom/logs, mode 0700: a shared temp folder would let others
    read the output or plant a symlink where the logs go."""
    from platformdirs import user_cache_path

    folder = user_cache_path("taskloom") / "logs"
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise CommandFailed(f"log folder {folder} is a symlink or not a folder: not using it")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise CommandFailed(f"log folder {folder} belongs to another user: not using it")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(folder, 0o700)
    return folder


def adopted_command(attempt: supervision.SupervisedAttempt, name: str):
    """For recovery: a callable that waits for the end of a command an earlier owner
    started (``attempt``, as its supervisor recorded it) and returns or raises as the
    command's own call would have. A cancel or timeout ends its process group."""

    from ._jobs import supervision

    def wait_end() -> None:
        run = current_run()
        if run is not None:
            run.on_cancel(lambda: None if run.detached else _stop_adopted(attempt))
        stopped = (lambda: run.detached) if run is not None else (lambda: False)
        end = supervision.wait_end(attempt, stopped)
        if end.get("lost"):  # nobody supervises it now: it must not run on unrecorded
            _stop_adopted(attempt)
        return command_outcome(run, end, name)

    return wait_end


def _stop_adopted(attempt: supervision.SupervisedAttempt) -> None:
    """SIGTERM the adopted command's group now, SIGKILL after the grace (on a thread:
    the caller may be the GUI)."""
    import threading

    from ._jobs import supervision

    supervision.signal_adopted(attempt, signal.SIGTERM)

    def kill_later() -> None:
        time.sleep(GRACE_SECONDS)
        if attempt.end is None:
            supervision.signal_adopted(attempt, signal.SIGKILL)

    threading.Thread(target=kill_later, daemon=True, name="kill-adopted-command").start()
