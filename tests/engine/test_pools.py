"""The process pool executor: tasks run in child processes, a dying child fails only
its attempt, and the pool recovers; cancel and timeout reach a running command."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from taskloom.engine import Call, RetryPolicy, Scheduler, TaskState
from taskloom.engine.command import Command
from taskloom.engine.pools import RecoveringProcessPool, make_executor
from tests.engine import _remote_tasks as remote

S = TaskState
TASKS = "tests.engine._remote_tasks"
pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def pool():
    pool = RecoveringProcessPool(2)
    pool.submit(os.getpid).result(timeout=30)  # start the children before timing anything
    yield pool
    pool.shutdown(wait=True, cancel_futures=True)


def call(name: str, **kwargs) -> Call:
    return Call(f"{TASKS}:{name}", kwargs)


def pid_in(path: Path) -> int:
    return int(path.read_text().split()[0])


# ---------------------------------------------------------------------- make_executor
@pytest.mark.timeout(30)
def test_make_executor_maps_each_setting_to_an_executor():
    assert make_executor("threads", 4) is None
    processes = make_executor("processes", 2)
    try:
        assert isinstance(processes, RecoveringProcessPool)
        assert processes.submit(os.getpid).result(timeout=30).value != os.getpid()
    finally:
        processes.shutdown()


@pytest.mark.parametrize(
    "spec", ["Threads", "process", "dask://", "dask://host", "dask://host:port", "tcp://h:1", ""]
)
def test_make_executor_refuses_an_unknown_setting_and_names_it(spec):
    with pytest.raises(ValueError, match="threads.*processes.*dask://HOST:PORT") as caught:
        make_executor(spec, 2)
    assert repr(spec) in str(caught.value)


@pytest.mark.timeout(5)
@pytest.mark.parametrize("port", ["0", "65536", "99999"])
def test_make_executor_refuses_a_port_out_of_range_without_connecting(port):
    with pytest.raises(ValueError, match="port must be 1 to 65535") as caught:
        make_executor(f"dask://localhost:{port}", 2)
    assert f"dask://localhost:{port}" in str(caught.value)


# ---------------------------------------------------------------------- running
def test_calls_run_in_child_processes_and_each_attempt_names_its_process(pool, tmp_path):
    with Scheduler(workers=2, executor=pool, log_dir=str(tmp_path)) as s:
        for name in ("a", "b", "c"):
            s.add(call("record_pid", path=str(tmp_path / name)), name=name)
        s.add(call("record_pid", path=str(tmp_path / "d")), name="d", deps=("a", "b", "c"))
        assert s.wait(30)
        states = {info.id: info.state for info in s.tasks()}
        workers = {tid: s.attempts(tid)[-1].worker for tid in states}
    assert set(states.values()) == {S.SUCCEEDED}
    for tid, worker in workers.items():
        pid = pid_in(tmp_path / tid)
        assert pid != os.getpid()
        assert worker == f"pid {pid}"


def test_a_task_that_cannot_be_pickled_fails_its_attempt_with_advice(pool):
    with Scheduler(workers=1, executor=pool) as s:
        s.add(lambda: None, name="lam")
        assert s.wait(30)
        info = s.task("lam")
    assert info.state is S.FAILED
    assert info.error.startswith("TypeError:")
    assert "cannot be sent to a worker process" in info.error
    assert "module:function" in info.error


def test_a_remote_exception_keeps_its_type_and_the_child_traceback(pool):
    with Scheduler(workers=1, executor=pool) as s:
        s.add(call("fail", message="boom"), name="bad")
        assert s.wait(30)
        attempt = s.attempts("bad")[-1]
    assert s.task("bad").error == "ValueError: boom"
    assert attempt.traceback is not None
    assert "Traceback on pid" in attempt.traceback
    assert "_remote_tasks.py" in attempt.traceback  # the frame where it was raised


# ---------------------------------------------------------------------- dying processes
def test_a_process_that_exits_fails_its_attempt_and_later_tasks_still_run(pool, tmp_path):
    with Scheduler(workers=1, executor=pool) as s:
        s.add(call("exit_process", code=3), name="crash")
        s.add(
            call("record_pid", path=str(tmp_path / "after")),
            name="after",
            deps=("crash",),
            trigger_rule="all_done",
        )
        s.add(call("record_pid", path=str(tmp_path / "later")), name="later", deps=("after",))
        assert s.wait(30)
        crash = s.task("crash")
        crash_attempts = s.attempts("crash")
        after_worker = s.attempts("after")[-1].worker
        states = {tid: s.task(tid).state for tid in ("after", "later")}
    assert crash.state is S.FAILED
    assert crash.error.startswith("WorkerLost:")
    assert [a.outcome for a in crash_attempts] == ["failed"]
    assert states == {"after": S.SUCCEEDED, "later": S.SUCCEEDED}
    assert pool.restarts == 1
    assert after_worker == f"pid {pid_in(tmp_path / 'after')}"


def test_an_attempt_whose_process_died_is_retried_in_a_fresh_process(pool, tmp_path):
    marker = tmp_path / "died-once"
    retry = RetryPolicy(max_attempts=3, base=0.01, jitter=0.0)
    with Scheduler(workers=2, executor=pool) as s:
        s.add(call("exit_process_once", marker=str(marker)), name="flaky", retry=retry)
        assert s.wait(30)
        attempts = s.attempts("flaky")
        state = s.task("flaky").state
    assert state is S.SUCCEEDED
    assert [a.outcome for a in attempts] == ["failed", "succeeded"]
    assert attempts[0].error.startswith("WorkerLost:")
    died_in = int(marker.read_text())
    assert attempts[1].worker != f"pid {died_in}"


def test_the_pool_takes_submissions_after_a_crash_without_the_engine(pool):
    lost = pool.submit(remote.exit_process, 5)
    with pytest.raises(Exception, match="worker process died"):
        lost.result(timeout=30)
    assert pool.submit(os.getpid).result(timeout=30).error is None
    assert pool.restarts == 1


# ---------------------------------------------------------------------- commands
def test_a_command_sends_back_its_output_exit_code_and_log(pool, tmp_path):
    failing = Command(["sh", "-c", "echo hello; echo oops >&2; exit 4"])
    with Scheduler(workers=1, executor=pool, log_dir=str(tmp_path)) as s:
        s.add(failing, name="cmd")
        assert s.wait(30)
        info, attempt = s.task("cmd"), s.attempts("cmd")[-1]
    assert info.state is S.FAILED
    assert info.error == "CommandFailed: exit code 4: oops"
    assert attempt.exit_code == 4
    assert "hello" in attempt.output and "oops" in attempt.output
    assert "oops" in Path(attempt.log_path).read_text()
    assert attempt.worker.startswith("pid ") and attempt.worker != f"pid {os.getpid()}"


@pytest.mark.skipif(
    not remote.engine_submits_in_run_context(),
    reason="the engine does not make the run's context current in submit() (see report)",
)
def test_a_command_logs_into_the_schedulers_log_dir_under_its_task_id(pool, tmp_path):
    with Scheduler(workers=1, executor=pool, log_dir=str(tmp_path)) as s:
        s.add(Command(["echo", "hi"]), name="greet")
        assert s.wait(30)
        attempt = s.attempts("greet")[-1]
    assert Path(attempt.log_path).parent == tmp_path
    assert Path(attempt.log_path).name.startswith("greet-1-")


def test_cancel_terminates_a_command_running_in_a_pool_process(pool, tmp_path):
    info, attempt, pid, took = remote.cancel_a_running_sleeper(pool, 1, tmp_path)
    assert info.state is S.CANCELLED
    assert attempt.outcome == "cancelled"
    assert attempt.exit_code == -15  # SIGTERM reached it
    assert not remote.process_exists(pid)
    assert took < 20  # the sleep was 60 s


def test_a_timeout_terminates_a_command_running_in_a_pool_process(pool):
    started = time.monotonic()
    with Scheduler(workers=1, executor=pool) as s:
        s.add(Command(["sleep", "60"]), name="slow", timeout=1.0)
        assert s.wait(30)
        info = s.task("slow")
    took = time.monotonic() - started  # includes shutdown: waits for the command to end
    assert info.state is S.FAILED
    assert info.error.startswith("TaskTimeout:")
    assert took < 20
