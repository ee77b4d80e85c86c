"""``call`` tasks find a module that sits next to the workflow file, in every
executor, and ``validate`` checks that each call imports (taskloom/imports.py)."""

from __future__ import annotations

import logging
import sys
import textwrap

import pytest

from tests.test_cli import private_store_dir, taskloom, write  # noqa: F401

HELPER = """
from pathlib import Path

def work(path, word):
    Path(path).write_text(word)
"""


def _flow(tmp_path, ref="helper_mod_{n}:work", n=0):
    (tmp_path / f"helper_mod_{n}.py").write_text(textwrap.dedent(HELPER))
    out = tmp_path / "out.txt"
    text = f"""
        [tasks.first]
        call = "{ref.format(n=n)}"
        args = {{ path = "{out}", word = "hello" }}
        """
    return write(tmp_path, text), out


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_run_imports_a_call_beside_the_workflow_file(tmp_path, executor):
    path, out = _flow(tmp_path)
    result = taskloom("run", path, "--executor", executor)  # run from the repository
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.read_text() == "hello"


def test_validate_checks_each_call_imports_with_its_line_and_column(tmp_path):
    path, _ = _flow(tmp_path)
    assert taskloom("validate", path).returncode == 0
    (tmp_path / "broken_mod.py").write_text("def oops(:\n")
    bad = write(
        tmp_path,
        """
        [tasks.fine]
        call = "helper_mod_0:work"

        [tasks.missing]
        command = ["true"]

        [tasks."no module"]
        call   =  "nowhere_mod:work"

        [tasks.no_function]
        call = "helper_mod_0:wrok"

        [tasks.syntax]
        call = "broken_mod:oops"
        """,
        "bad.toml",
    )
    result = taskloom("validate", bad)
    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        f"{bad}:9:11: call 'nowhere_mod:work': cannot import module 'nowhere_mod': "
        "No module named 'nowhere_mod'",
        f"{bad}:12:8: call 'helper_mod_0:wrok': module 'helper_mod_0' has no 'wrok'",
        f"{bad}:15:8: call 'broken_mod:oops': SyntaxError: invalid syntax (broken_mod.py, line 1)",
    ]
    assert result.stderr.strip() == f"{bad}: 3 problems"


@pytest.mark.slow
def test_dask_workers_get_the_folder_too(tmp_path):
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from taskloom.engine import Scheduler, TaskState
    from taskloom.engine.pools import DaskExecutor
    from taskloom.engine.workflow import load
    from taskloom.imports import use_workflow_folder

    path, out = _flow(tmp_path, n=1)
    folder = str(tmp_path)
    cluster = LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.CRITICAL,
    )
    client = Client(cluster)
    saved = sys.path[:]
    try:
        executor = DaskExecutor(client)

        def has_folder():
            import sys

            return folder in sys.path

        assert not any(client.run(has_folder).values())  # started before: not on its path
        workflow = load(path)
        use_workflow_folder(workflow, executor)
        assert all(client.run(has_folder).values())
        with Scheduler(workers=1, executor=executor) as scheduler:
            workflow.schedule_into(scheduler)
            assert scheduler.wait(30)
            assert scheduler.task("first").state is TaskState.SUCCEEDED
        assert out.read_text() == "hello"
    finally:
        sys.path[:] = saved
        client.close()
        cluster.close()


def test_validate_json_stays_json_when_a_module_prints_on_import(tmp_path):
    import json

    (tmp_path / "chatty_mod.py").write_text("print('hello from import')\ndef go():\n    pass\n")
    path = write(tmp_path, '[tasks.a]\ncall = "chatty_mod:go"\n')
    result = taskloom("validate", path, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["valid"] is True
    assert "hello from import" in result.stderr
