"""What crontab and systemd users write out of habit: @daily, "5 min", "1w",
and other schedulers' names for ``deps``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from taskloom.engine.cron import CronTrigger, describe
from taskloom.engine.durations import parse_duration
from taskloom.engine.workflow import WorkflowError, loads


@pytest.mark.parametrize(
    ("macro", "fields"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        (" @Daily ", "0 0 * * *"),
    ],
)
def test_cron_shorthands_fire_when_their_fields_do(macro, fields):
    after = datetime(2026, 3, 5, 10, 17, tzinfo=UTC)
    shorthand, spelled = CronTrigger(macro, "Asia/Tokyo"), CronTrigger(fields, "Asia/Tokyo")
    assert shorthand.next_n(after, 3) == spelled.next_n(after, 3)
    assert describe(macro) == describe(fields)
    assert shorthand.expr == macro.strip()  # kept as written, for the file and the window


def test_an_unknown_shorthand_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match=r"'@reboot': unknown shorthand \(known: @yearly"):
        CronTrigger("@reboot")


def test_a_workflow_file_takes_a_shorthand():
    workflow = loads('[tasks.backup]\ncommand = ["true"]\ncron = "@daily"\ntimezone = "UTC"\n')
    assert workflow.tasks["backup"].cron == "@daily"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30 sec", 30.0),
        ("30sec", 30.0),
        ("5 min", 300.0),
        ("5 mins", 300.0),
        ("2 hours", 7200.0),
        ("1 hour 30 min", 5400.0),
        ("1 day", 86400.0),
        ("2 days", 172800.0),
        ("1w", 604800.0),
        ("1 week 2d", 9 * 86400.0),
        ("500ms", 0.5),
        ("500 msec", 0.5),
        ("10 seconds", 10.0),
        ("1h30m", 5400.0),
    ],
)
def test_systemd_duration_spellings(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5 mon", "1 year", "1 hourz", "3 x", "min"])
def test_what_systemd_also_refuses_stays_refused(text):
    with pytest.raises(ValueError, match="bad duration"):
        parse_duration(text)


@pytest.mark.parametrize("key", ["dependencies", "depends_on", "needs", "after_tasks"])
def test_other_schedulers_names_for_deps_get_a_hint(key):
    text = f'[tasks.a]\ncommand = ["true"]\n[tasks.b]\ncommand = ["true"]\n{key} = ["a"]\n'
    with pytest.raises(WorkflowError) as caught:
        loads(text)
    (problem,) = caught.value.problems
    assert problem.key == key
    assert problem.message == "unknown key (did you mean 'deps'?)"
