"""Workflows on a real Dask cluster (LocalCluster on loopback, two worker processes)."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

import dask
from distributed import Client, LocalCluster

from taskloom.engine import Call, RetryPolicy, Scheduler, TaskState
from taskloom.engine.command import Command
from taskloom.engine.pools import DaskExecutor, make_executor
from tests.engine import _remote_tasks as remote

S = TaskState
TASKS = "tests.engine._remote_tasks"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def client():
    # Every worker death fails the task at once, so a killed worker is a FAILED attempt
    # the engine retries, not a rerun dask makes behind its back.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()


@pytest.fixture
def executor(client):
    client.wait_for_workers(2, timeout=30)  # a worker killed by an earlier test is back
    return DaskExecutor(client)


def call(name: str, **kwargs) -> Call:
    return Call(f"{TASKS}:{name}", kwargs)


def test_a_workflow_runs_on_the_cluster_workers(client, executor, tmp_path):
    worker_pids = set(client.run(os.getpid).values())
    with Scheduler(workers=2, executor=executor) as s:
        s.add(call("record_pid", path=str(tmp_path / "top")), name="top")
        s.add(call("record_pid", path=str(tmp_path / "left")), name="left", deps=("top",))
        s.add(call("record_pid", path=str(tmp_path / "right")), name="right", deps=("top",))
        s.add(call("record_pid", path=str(tmp_path / "end")), name="end", deps=("left", "right"))
        assert s.wait(30)
        states = {info.id: info.state for info in s.tasks()}
        workers = {tid: s.attempts(tid)[-1].worker for tid in states}
    assert set(states.values()) == {S.SUCCEEDED}
    addresses = set(client.scheduler_info()["workers"])
    assert set(workers.values()) <= addresses
    ran_in = {int((tmp_path / tid).read_text().split()[0]) for tid in states}
    assert ran_in <= worker_pids
    assert os.getpid() not in ran_in


def test_make_executor_connects_to_a_dask_address(client, tmp_path):
    address = client.scheduler.address.removeprefix("tcp://")
    executor = make_executor(f"dask://{address}", 2)
    try:
        assert isinstance(executor, DaskExecutor)
        with Scheduler(workers=2, executor=executor) as s:
            s.add(call("record_pid", path=str(tmp_path / "pid")), name="remote")
            assert s.wait(30)
            worker = s.attempts("remote")[-1].worker
        assert s.task("remote").state is S.SUCCEEDED
        assert worker in client.scheduler_info()["workers"]
    finally:
        executor.shutdown()
    assert executor.client.status == "closed"  # it made the client, so it closed it
    assert client.status == "running"


def test_a_remote_exception_keeps_its_type_and_the_worker_traceback(executor):
    with Scheduler(workers=1, executor=executor) as s:
        s.add(call("fail", message="boom"), name="bad")
        assert s.wait(30)
        info, attempt = s.task("bad"), s.attempts("bad")[-1]
    assert info.error == "ValueError: boom"
    assert "Traceback on tcp://127.0.0.1:" in attempt.traceback
    assert "_remote_tasks.py" in attempt.traceback


def test_a_command_on_the_cluster_sends_back_output_exit_code_and_worker(client, executor):
    failing = Command(["sh", "-c", "echo hello; echo oops >&2; exit 4"])
    retry = RetryPolicy(max_attempts=2, base=0.01, jitter=0.0)
    with Scheduler(workers=2, executor=executor) as s:
        s.add(failing, name="cmd", retry=retry)
        assert s.wait(30)
        info, attempts = s.task("cmd"), s.attempts("cmd")
    assert info.state is S.FAILED
    assert [a.exit_code for a in attempts] == [4, 4]
    assert all("hello" in a.output and "oops" in a.output for a in attempts)
    assert all("oops" in Path(a.log_path).read_text() for a in attempts)
    assert {a.worker for a in attempts} <= set(client.scheduler_info()["workers"])


def test_a_killed_worker_fails_the_attempt_and_the_retry_succeeds(client, executor, tmp_path):
    marker = tmp_path / "killed-once"
    retry = RetryPolicy(max_attempts=3, base=0.01, jitter=0.0)
    with Scheduler(workers=2, executor=executor) as s:
        s.add(call("kill_own_process_once", marker=str(marker)), name="victim", retry=retry)
        s.add(call("record_pid", path=str(tmp_path / "next")), name="next", deps=("victim",))
        assert s.wait(45)
        attempts = s.attempts("victim")
        states = {tid: s.task(tid).state for tid in ("victim", "next")}
    assert states == {"victim": S.SUCCEEDED, "next": S.SUCCEEDED}
    assert [a.outcome for a in attempts] == ["failed", "succeeded"]
    assert attempts[0].error.startswith("KilledWorker:")
    assert attempts[0].worker.startswith("tcp://127.0.0.1:")  # the worker that died
    killed_pid = int(marker.read_text())
    assert not remote.process_exists(killed_pid)
    assert int((tmp_path / "next").read_text().split()[0]) != killed_pid


def test_cancel_terminates_a_command_running_on_the_cluster(client, executor, tmp_path):
    info, attempt, pid, took = remote.cancel_a_running_sleeper(executor, 2, tmp_path)
    assert info.state is S.CANCELLED
    assert attempt.outcome == "cancelled"
    assert attempt.exit_code == -15  # SIGTERM reached it on the worker
    assert attempt.worker in client.scheduler_info()["workers"]
    assert not remote.process_exists(pid)
    assert took < 20  # the sleep was 60 s


def test_a_timeout_terminates_a_command_running_on_the_cluster(executor):
    started = time.monotonic()
    with Scheduler(workers=1, executor=executor) as s:
        s.add(Command(["sleep", "60"]), name="slow", timeout=1.0)
        assert s.wait(30)
        info = s.task("slow")
    took = time.monotonic() - started  # includes shutdown: waits for the command to end
    assert info.state is S.FAILED
    assert info.error.startswith("TaskTimeout:")
    assert took < 20


def test_cancel_of_a_run_still_queued_on_the_cluster_means_it_never_runs(executor, tmp_path):
    fifos = [tmp_path / "first", tmp_path / "second"]
    for fifo in fifos:
        os.mkfifo(fifo)
    queued_settled = threading.Event()
    with Scheduler(workers=3, executor=executor) as s:
        s.on("cancelled", lambda e: e.task_id == "queued" and queued_settled.set())
        for i, fifo in enumerate(fifos):  # one per worker thread: the cluster is full
            s.add(remote.announcing_sleeper(str(fifo)), name=f"busy{i}")
        s.add(call("record_pid", path=str(tmp_path / "queued")), name="queued")
        s.start()
        pids = [remote.read_announced_pid(str(fifo)) for fifo in fifos]
        assert s.task("queued").state is S.RUNNING  # submitted, waiting for a worker
        assert s.cancel("queued")
        # Settled while both workers are still busy: it was dropped, not run.
        assert queued_settled.wait(30)
        for i in range(2):
            s.cancel(f"busy{i}")
        assert s.wait(30)
        states = {info.id: info.state for info in s.tasks()}
    assert set(states.values()) == {S.CANCELLED}
    assert not (tmp_path / "queued").exists()
    assert not any(remote.process_exists(pid) for pid in pids)
