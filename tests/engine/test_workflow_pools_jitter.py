"""Workflow keys of issue 26 (second half): ``[pools]``, ``pool`` and ``jitter``."""

from __future__ import annotations

import textwrap

import pytest

from taskloom.engine import ManualClock, Scheduler, SyncExecutor
from taskloom.engine.workflow import WorkflowError, load, loads, save
from taskloom.engine.workflow_text import locate_problems

FINGERPRINT_BEFORE = "3b5b38a06d9ccef0"  # of that task, by the code before these keys

FLOW = """
[pools]
db = 2
gpu = 1

[tasks.extract]
command = ["true"]
pool = "db"
jitter = "5m"
every = "1h"

[tasks.train]
command = ["true"]
pool = "gpu"
deps = ["extract"]
"""


def test_pools_pool_and_jitter_are_read_and_saved_back(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text(FLOW)
    w = load(path)
    assert w.pools == {"db": 2, "gpu": 1}
    assert (w.tasks["extract"].pool, w.tasks["extract"].jitter) == ("db", 300.0)
    assert (w.tasks["train"].pool, w.tasks["train"].jitter) == ("gpu", None)
    save(w, tmp_path / "again.toml")
    text = (tmp_path / "again.toml").read_text()
    assert "[pools]\ndb = 2\ngpu = 1\n" in text and 'jitter = "5m"' in text
    assert load(tmp_path / "again.toml") == w


def test_a_file_without_the_keys_keeps_its_fingerprints():
    w = loads('[tasks.a]\ncommand = ["true"]\nevery = "1h"\n', path="/srv/flows/f.toml")
    assert w.pools == {}
    # The digest a resumed run compares: the same as before the keys existed.
    assert w.fingerprints() == {"a": FINGERPRINT_BEFORE}


def test_the_workflow_schedules_into_a_scheduler_with_its_pools():
    w = loads(FLOW)
    s = Scheduler(clock=ManualClock(), executor=SyncExecutor(), pools=w.pools)
    w.schedule_into(s)
    assert s.definition("extract").pool == "db" and s.definition("extract").jitter == 300.0
    assert s.pool_usage() == {"db": (0, 2, []), "gpu": (0, 1, [])}
    s.shutdown()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[pools]\ndb = 0\n\n[tasks.a]\ncommand = ["true"]\n',
            "f.toml:2:1: pools.db: must be an integer >= 1, got 0",
        ),
        (
            '[pools]\ndb = 1\n\n[tasks.a]\ncommand = ["true"]\npool = "dbb"\n',
            "f.toml:6:1: tasks.a.pool: must name a pool of [pools] ('db'), got 'dbb'",
        ),
        (
            '[tasks.a]\ncommand = ["true"]\npool = "db"\n',
            "f.toml:3:1: tasks.a.pool: must name a pool of [pools] (none: add a [pools] table),"
            " got 'db'",
        ),
        (
            '[tasks.a]\ncommand = ["true"]\n  jitter = "-5m"\n',
            "f.toml:3:3: tasks.a.jitter: must be >= 0, got '-5m'",
        ),
        ("pools = 3\n[tasks.a]\ncommand = ['true']\n", "f.toml:1:1: pools: must be a table, got"),
    ],
)
def test_bad_keys_are_named_with_file_line_and_column(text, expected):
    with pytest.raises(WorkflowError) as err:
        loads(textwrap.dedent(text), path="f.toml")
    lines = [
        f"{p.file}:{p.line}:{p.column}: {p.where}: {p.message}"
        for p in locate_problems(err.value.problems, text)
    ]  # as taskloom validate prints them
    assert any(line.startswith(expected) for line in lines), lines
