"""taskloom backfill: exactly the range's cron and interval occurrences, across the
DST changes of Europe/Berlin, each told its own TASKLOOM_SCHEDULED_AT, in order, as
one run (ManualClock for the engine; one real `taskloom backfill` process)."""

from __future__ import annotations

import textwrap
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from taskloom.backfill import BackfillError, backfill_workflow, occurrences
from taskloom.engine import ManualClock, Scheduler, SyncExecutor, current_run
from taskloom.engine.workflow import loads
from tests.test_cli import taskloom, write

BERLIN = ZoneInfo("Europe/Berlin")
FLOW = """
[workflow]
name = "nightly"
workers = 2

[tasks.nightly]
command = ["true"]
cron = "30 2 * * *"
timezone = "Europe/Berlin"

[tasks.hourly]
command = ["true"]
cron = "0 * * * *"
timezone = "Europe/Berlin"

[tasks.six]
command = ["true"]
every = "6h"
timezone = "Europe/Berlin"
skip = ["2026-10-26"]

[tasks.once]
command = ["true"]
"""


def berlin(*args) -> datetime:
    return datetime(*args, tzinfo=BERLIN).astimezone(UTC)


@pytest.fixture
def workflow(tmp_path):
    return loads(textwrap.dedent(FLOW), tmp_path / "flow.toml")


def test_a_fixed_time_runs_once_on_each_dst_day(workflow):
    nightly = workflow.tasks["nightly"]
    spring = occurrences(nightly, date(2026, 3, 28), date(2026, 3, 30))
    assert spring == [
        berlin(2026, 3, 28, 2, 30),
        berlin(2026, 3, 29, 3, 0),
        berlin(2026, 3, 30, 2, 30),
    ]
    autumn = occurrences(nightly, date(2026, 10, 24), date(2026, 10, 26))
    # 02:30 comes twice on the 25th: once, at its first (00:30 UTC, still summer time)
    assert autumn == [
        datetime(2026, 10, 24, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 26, 1, 30, tzinfo=UTC),
    ]


def test_every_hour_of_the_days_as_they_were_long(workflow):
    hourly = workflow.tasks["hourly"]
    assert len(occurrences(hourly, date(2026, 3, 29), date(2026, 3, 29))) == 23
    autumn = occurrences(hourly, date(2026, 10, 25), date(2026, 10, 25))
    assert len(autumn) == 25 and len(set(autumn)) == 25
    assert autumn[0] == berlin(2026, 10, 25, 0, 0) and autumn[-1] == berlin(2026, 10, 25, 23, 0)


def test_an_interval_counts_from_midnight_and_keeps_out_its_calendar_days(workflow):
    six = occurrences(workflow.tasks["six"], date(2026, 10, 25), date(2026, 10, 26))
    # the 25th has 25 hours: 00, 06, 12, 18 elapsed hours from midnight; the 26th skipped
    assert six == [
        berlin(2026, 10, 25, 0, 0),
        datetime(2026, 10, 25, 4, 0, tzinfo=UTC),
        datetime(2026, 10, 25, 10, 0, tzinfo=UTC),
        datetime(2026, 10, 25, 16, 0, tzinfo=UTC),
        datetime(2026, 10, 25, 22, 0, tzinfo=UTC),  # 23:00 CET, still the 25th
    ]


def test_the_backfill_runs_each_occurrence_once_in_order_told_its_time(workflow):
    made = backfill_workflow(workflow, date(2026, 10, 24), date(2026, 10, 26), ["nightly", "six"])
    told: list[tuple[str, datetime]] = []

    def record(name):
        def task():
            run = current_run()
            assert run is not None and run.scheduled_at is not None
            told.append((name, datetime.fromtimestamp(run.scheduled_at, UTC)))

        return task

    from dataclasses import replace

    made.tasks = {tid: replace(t, action=record(tid)) for tid, t in made.tasks.items()}
    clock = ManualClock(wall=datetime(2026, 11, 2, tzinfo=UTC))
    scheduler = Scheduler(workers=1, clock=clock, executor=SyncExecutor())
    made.schedule_into(scheduler)
    scheduler.start()
    clock.advance(0)
    scheduler.shutdown()
    expected = sorted(
        [(w, "nightly") for w in occurrences(workflow.tasks["nightly"], date(2026, 10, 24),
                                             date(2026, 10, 26))]
        + [(w, "six") for w in occurrences(workflow.tasks["six"], date(2026, 10, 24),
                                           date(2026, 10, 26))]
    )  # fmt: skip
    assert [when for _, when in told] == [when for when, _ in expected]  # in order
    assert [name.partition("@")[0] for name, _ in told] == [name for _, name in expected]
    assert len(told) == 3 + 9  # nightly 3 days; six: 4 on the 24th, 5 on the 25th


def test_what_cannot_be_backfilled_is_said(workflow):
    with pytest.raises(BackfillError, match="once has no cron or every"):
        backfill_workflow(workflow, date(2026, 10, 1), date(2026, 10, 2), ["once"])
    with pytest.raises(BackfillError, match="before --from"):
        backfill_workflow(workflow, date(2026, 10, 2), date(2026, 10, 1))
    with pytest.raises(BackfillError, match="no task 'nope'"):
        backfill_workflow(workflow, date(2026, 10, 1), date(2026, 10, 2), ["nope"])


def test_a_real_backfill_tells_each_command_its_time_and_is_one_run(tmp_path):
    told = tmp_path / "told.txt"
    path = write(
        tmp_path,
        f"""
        [workflow]
        name = "nightly"
        workers = 1

        [tasks.nightly]
        command = "echo $TASKLOOM_SCHEDULED_AT >> {told}"
        shell = true
        cron = "30 2 * * *"
        timezone = "Europe/Berlin"
        """,
    )
    data = str(tmp_path / "data")
    dry = taskloom("backfill", path, "--from", "2026-10-24", "--to", "2026-10-26", "--dry-run",
                   XDG_DATA_HOME=data)  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "would run 3 occurrences" in dry.stdout and not told.exists()
    result = taskloom("backfill", path, "--from", "2026-10-24", "--to", "2026-10-26",
                      XDG_DATA_HOME=data, TZ="Europe/Berlin")  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert told.read_text().split() == [
        "2026-10-24T02:30:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]
    # one run of the workflow's own store, labelled: `history FILE` shows it
    assert [p.name for p in (tmp_path / "data" / "taskloom" / "runs").glob("*.db")] == [
        p.name for p in (tmp_path / "data" / "taskloom" / "runs").glob("nightly-*.db")
    ]
    history = taskloom("history", path, "--json", XDG_DATA_HOME=data)
    assert history.returncode == 0, history.stderr
    import json

    attempts = json.loads(history.stdout)["attempts"]
    assert sorted(a["task"] for a in attempts) == [
        "nightly@2026-10-24T02:30:00+02:00",
        "nightly@2026-10-25T02:30:00+02:00",
        "nightly@2026-10-26T02:30:00+01:00",
    ]
    assert {(a["run"], a["run_label"]) for a in attempts} == {
        (1, "backfill 2026-10-24 to 2026-10-26")
    }  # one run, named as a backfill with its range
    text = taskloom("history", path, XDG_DATA_HOME=data)
    assert text.stdout.splitlines()[0] == "run 1: backfill 2026-10-24 to 2026-10-26"
    status = taskloom("status", path, XDG_DATA_HOME=data)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith("nightly: run 1 (backfill 2026-10-24 to 2026-10-26) in ")
    bad = taskloom("backfill", path, "--from", "2026-10-32", "--to", "2026-11-01",
                   XDG_DATA_HOME=data)  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.strip() == "taskloom backfill: '2026-10-32' is not a date like 2026-11-01"


def test_the_occurrences_keep_their_pool_and_leave_their_jitter(tmp_path):
    workflow = loads(
        textwrap.dedent(
            """
            [pools]
            db = 1

            [tasks.load]
            command = ["true"]
            cron = "0 3 * * *"
            pool = "db"
            jitter = "5m"
            """
        ),
        tmp_path / "flow.toml",
    )
    made = backfill_workflow(workflow, date(2026, 11, 1), date(2026, 11, 3))
    assert made.pools == {"db": 1}
    assert [(t.pool, t.jitter) for t in made.tasks.values()] == [("db", None)] * 3


@pytest.mark.slow
def test_an_interrupted_backfill_is_resumed_by_its_own_command_not_by_run(tmp_path):
    import json
    import subprocess
    import sys

    from tests._processes import wait_for
    from tests.test_cli import ENV, ROOT

    told, go, block = tmp_path / "told.txt", tmp_path / "go", tmp_path / "block"
    block.touch()
    second = "2026-10-25T02:30:00+02:00"
    path = write(
        tmp_path,
        f"""
        [workflow]
        name = "nightly"
        workers = 1

        [tasks.nightly]
        command = '''echo "$TASKLOOM_SCHEDULED_AT" >> {told}
        if [ "$TASKLOOM_SCHEDULED_AT" = {second} ] && [ -e {block} ]; then
          rm {block}; sleep 60 & touch {go}; wait
        fi'''
        shell = true
        cron = "30 2 * * *"
        timezone = "Europe/Berlin"

        [tasks.report]
        command = "echo report >> {told}"
        shell = true
        """,
    )
    data = str(tmp_path / "data")
    days = ("--from", "2026-10-24", "--to", "2026-10-26")
    process = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "backfill", str(path), *days],
        cwd=ROOT,
        env={**ENV, "XDG_DATA_HOME": data, "TZ": "Europe/Berlin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # a real process: polled, with a deadline, until the second occurrence runs
    wait_for(lambda: go.exists() or process.poll() is not None, 60, "the second occurrence")
    assert go.exists(), process.communicate()
    # one owner at a time: the workflow's run is refused while the backfill owns the store
    busy = taskloom("run", path, "--until-idle", XDG_DATA_HOME=data, TZ="Europe/Berlin")
    assert busy.returncode == 75, busy.stdout + busy.stderr
    assert f"in use by taskloom backfill (pid {process.pid} " in busy.stderr, busy.stderr
    process.terminate()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 143, out + err
    assert told.read_text().split() == ["2026-10-24T02:30:00+02:00", second]

    again = taskloom("backfill", path, *days, XDG_DATA_HOME=data, TZ="Europe/Berlin")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (
        "resuming the unfinished backfill 2026-10-24 to 2026-10-26" in again.stdout + again.stderr
    )
    # the first occurrence had succeeded: only the interrupted one and the last run now
    assert told.read_text().split() == [
        "2026-10-24T02:30:00+02:00",
        second,
        second,
        "2026-10-26T02:30:00+01:00",
    ]

    # interrupt a second backfill at once, then `taskloom run`: the workflow's own run
    block.touch()
    go.unlink()
    process = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "backfill", str(path), *days],
        cwd=ROOT,
        env={**ENV, "XDG_DATA_HOME": data, "TZ": "Europe/Berlin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: go.exists() or process.poll() is not None, 60, "the second occurrence")
    assert go.exists(), process.communicate()
    process.terminate()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 143, out + err
    told.write_text("")
    run = taskloom("run", path, "--until-idle", XDG_DATA_HOME=data, TZ="Europe/Berlin")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "run 3 of nightly" in run.stdout + run.stderr
    assert "run 2 (backfill 2026-10-24 to 2026-10-26) did not finish" in run.stdout + run.stderr
    assert told.read_text().split() == ["report"]  # no backfill occurrence ran
    history = json.loads(
        taskloom("history", path, "--json", XDG_DATA_HOME=data, TZ="Europe/Berlin").stdout
    )
    by_run: dict[int, set[str]] = {}
    for attempt in history["attempts"]:
        by_run.setdefault(attempt["run"], set()).add(attempt["task"].partition("@")[0])
        label = attempt["run_label"]
        assert label == (None if attempt["run"] == 3 else "backfill 2026-10-24 to 2026-10-26")
    assert by_run == {1: {"nightly"}, 2: {"nightly"}, 3: {"report"}}


def test_a_labelled_run_is_resumed_only_by_its_label_and_forgotten_with_its_run(tmp_path):
    """runs.open_run on a real store: the backfill's label keeps `taskloom run` (no
    label) from resuming it, and pruning the run drops its label."""
    from taskloom.places import Retention
    from taskloom.runs import open_run, prune

    source = write(tmp_path, FLOW)
    made = backfill_workflow(loads(source.read_text(), source), date(2026, 11, 1),
                             date(2026, 11, 1), ["nightly"])  # fmt: skip
    label, db = "backfill 2026-11-01 to 2026-11-01 of nightly", tmp_path / "run.db"

    def opened(workflow, label=None):
        run = open_run(workflow, db, label=label)
        run.store.close()
        return run

    first = opened(made, label)  # nothing ran: unfinished
    assert (first.resumed, first.store.run) == (False, 1)
    again = opened(made, label)
    assert again.resumed and again.note.startswith(f"resuming the unfinished {label} in ")
    own = opened(loads(source.read_text(), source))
    assert (own.resumed, own.store.run) == (False, 2)
    assert own.note.endswith(f"; run 1 ({label}) did not finish and is left as it is")
    other = opened(made, label)  # after the workflow's run: a backfill run of its own
    assert (other.resumed, other.store.run) == (False, 3)
    assert other.note.endswith(
        "; run 2 (the workflow's own run) did not finish and is left as it is"
    )
    from taskloom.engine.store import SQLiteStore

    store = SQLiteStore(db)
    try:
        assert store.run_labels() == {1: label, 3: label}
        prune(store, Retention(runs=1, logs=1), None)
        assert store.run_labels() == {3: label}
    finally:
        store.close()
