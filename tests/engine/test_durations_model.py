"""Durations learned from history: the summary, the recency weighting, sampling,
the ``expected`` workflow key, and reading them back from a real store."""

from __future__ import annotations

import random

import pytest

from taskloom.engine import Attempt, Outcome, TaskDefinition
from taskloom.engine.durations_model import (
    EXPECTED,
    GUESS,
    HISTORY,
    KEEP,
    DurationModel,
    percentile,
)
from taskloom.engine.store import SQLiteStore
from taskloom.engine.workflow import WorkflowError, dumps, loads


def test_median_and_p90_of_a_tasks_history():
    model = DurationModel({"a": [float(s) for s in range(1, 11)]})
    stats = model.stats("a")
    assert stats.source == HISTORY
    assert stats.runs == 10
    assert stats.median == pytest.approx(5.5)
    assert stats.p90 == pytest.approx(9.1)


def test_recent_runs_weigh_more_than_old_ones():
    # Twenty runs of 10 s, then five of 20 s: the task got slower lately.
    model = DurationModel({"a": [10.0] * 20 + [20.0] * 5})
    assert model.stats("a").median == 10.0
    assert model.estimate("a") == 20.0
    # And the other way round: it got faster.
    assert DurationModel({"a": [20.0] * 20 + [10.0] * 5}).estimate("a") == 10.0


def test_only_the_last_runs_are_kept():
    model = DurationModel({"a": [100.0] * 10 + [1.0] * KEEP})
    assert model.stats("a").samples == (1.0,) * KEEP


def test_expected_key_stands_in_for_a_task_that_never_ran():
    model = DurationModel({"a": [4.0, 6.0]}, expected={"b": 300.0, "a": 999.0})
    assert model.stats("b").source == EXPECTED
    assert model.estimate("b") == 300.0
    assert model.stats("a").source == HISTORY  # history wins over the key
    assert model.estimate("a") in (4.0, 6.0)


def test_a_task_nobody_knows_gets_the_median_of_the_others_as_a_guess():
    model = DurationModel({"a": [2.0], "b": [4.0], "c": [30.0]})
    stats = model.stats("new")
    assert stats.source == GUESS
    assert stats.recent == 4.0


def test_sampling_draws_the_tasks_own_durations_newer_ones_more_often():
    model = DurationModel({"a": [1.0] * 10 + [9.0] * 10})
    rng = random.Random(7)
    draws = [model.sample("a", rng) for _ in range(2000)]
    assert set(draws) == {1.0, 9.0}
    assert draws.count(9.0) > draws.count(1.0) * 3  # the newer half weighs ~5x more


def test_sampling_an_expected_duration_stays_within_ten_percent():
    model = DurationModel(expected={"b": 100.0})
    rng = random.Random(1)
    draws = [model.sample("b", rng) for _ in range(500)]
    assert 90.0 <= min(draws) < 95.0
    assert 105.0 < max(draws) <= 110.0


def test_slower_than_usual_needs_history_and_a_run_past_p90():
    model = DurationModel({"a": [10.0] * 9 + [12.0], "b": [10.0, 10.0]})
    assert model.stats("a").p90 == pytest.approx(10.2)
    assert not model.is_slow("a", 10.1)
    assert model.is_slow("a", 10.3)
    assert not model.is_slow("b", 100.0)  # two runs make no p90
    assert not model.is_slow("never", 100.0)


def test_remaining_time_of_a_running_attempt_comes_from_the_runs_that_lasted_longer():
    model = DurationModel({"a": [10.0, 20.0, 30.0, 40.0]})
    assert model.remaining("a", 15.0) == pytest.approx(15.0)  # median of 20, 30, 40 is 30
    assert model.remaining("a", 100.0) == pytest.approx(10.0)  # slower than all: a tenth again


def test_a_running_attempt_of_a_task_nothing_is_known_of_is_given_its_age_again():
    """No history, no ``expected``: past the guess (1 s), it is not said to end in a
    tenth of its age (a 30 s command read "ETA in 1 s" for 30 s) but as long again."""
    model = DurationModel({}, expected={"known": 5.0})
    assert model.stats("new").source == "guess"
    assert model.remaining("new", 0.25) == pytest.approx(0.75)  # within the guess
    assert model.remaining("new", 20.0) == pytest.approx(20.0)
    assert model.remaining("known", 20.0) == pytest.approx(2.0)  # expected was said: a tenth


def test_percentile_refuses_nothing_to_summarise():
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)


def test_from_attempts_keeps_successes_only_in_start_order():
    attempts = [
        Attempt(2, 100.0, 103.0, Outcome.SUCCEEDED, None, None, None, None, None, None, "a"),
        Attempt(1, 0.0, 5.0, Outcome.SUCCEEDED, None, None, None, None, None, None, "a"),
        Attempt(3, 200.0, 290.0, Outcome.FAILED, "x", None, None, None, None, None, "a"),
    ]
    assert DurationModel.from_attempts(attempts).stats("a").samples == (5.0, 3.0)


def test_store_gives_the_last_successful_durations_of_every_run(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    try:
        rows = [
            ("a", 1, 0.0, 4.0, Outcome.SUCCEEDED),
            ("a", 2, 10.0, 16.0, Outcome.SUCCEEDED),
            ("a", 3, 20.0, 120.0, Outcome.FAILED),  # failures say nothing of a success's time
            ("b", 1, 5.0, None, Outcome.RUNNING),
        ]
        for task_id, number, started, ended, outcome in rows:
            record = Attempt(number, started, ended, outcome, None, None, None, None, None)
            store.put_attempt(record.to_row(task_id, lambda t: t))
        store.flush()
        store.new_run()  # an earlier run's attempts count too
        store.put_attempt(
            Attempt(4, 30.0, 38.0, Outcome.SUCCEEDED, None, None, None, None, None).to_row(
                "a", lambda t: t
            )
        )
        store.flush()
        assert store.succeeded_durations(2) == {"a": [6.0, 8.0]}
        model = DurationModel.from_store(store)
        assert model.stats("a").samples == (4.0, 6.0, 8.0)
        assert not model.has_history("b")
    finally:
        store.close()


def test_expected_key_in_a_workflow_file_round_trips_and_is_checked(tmp_path):
    text = '[workflow]\nname = "w"\n\n[tasks.a]\ncommand = ["true"]\nexpected = "5m"\n'
    workflow = loads(text, tmp_path / "w.toml")
    assert workflow.tasks["a"].expected == 300.0
    assert 'expected = "5m"' in dumps(workflow)
    assert loads(dumps(workflow), tmp_path / "w.toml") == workflow
    with pytest.raises(WorkflowError, match=r"tasks\.a\.expected: must be > 0"):
        loads(text.replace('"5m"', "0"), tmp_path / "w.toml")
    with pytest.raises(WorkflowError, match=r"tasks\.a\.expected: bad duration"):
        loads(text.replace('"5m"', '"soon"'), tmp_path / "w.toml")


def test_expected_does_not_change_a_tasks_fingerprint():
    plain = TaskDefinition("a", print)
    assert TaskDefinition("a", print, expected=30.0).fingerprint() == plain.fingerprint()


def test_failure_rate_from_attempts_and_store(tmp_path):
    attempts = [
        Attempt(1, 0.0, 5.0, Outcome.FAILED, "x", None, None, None, None, None, "a"),
        Attempt(2, 10.0, 15.0, Outcome.SUCCEEDED, None, None, None, None, None, None, "a"),
        Attempt(3, 20.0, 21.0, Outcome.CANCELLED, None, None, None, None, None, None, "a"),
        Attempt(4, 30.0, 35.0, Outcome.FAILED, "x", None, None, None, None, None, "a"),
        Attempt(5, 40.0, 45.0, Outcome.SUCCEEDED, None, None, None, None, None, None, "a"),
    ]
    model = DurationModel.from_attempts(attempts)
    assert model.failure_rate("a") == 0.5  # cancelled says nothing
    assert model.failure_rate("never") == 0.0
    rng = random.Random(2)
    assert not any(model.fails("never", rng) for _ in range(100))
    draws = [model.fails("a", rng) for _ in range(1000)]
    assert 400 < sum(draws) < 600
    store = SQLiteStore(tmp_path / "s.db")
    try:
        for a in attempts:
            store.put_attempt(a.to_row("a", lambda t: t))
        store.flush()
        assert store.failure_rates(50) == {"a": 0.5}
        assert store.failure_rates(2) == {"a": 0.5}  # the last two: failed 4, succeeded 5
        assert DurationModel.from_store(store).failure_rate("a") == 0.5
    finally:
        store.close()


def test_a_model_knows_nothing_only_without_any_history_or_expected_duration():
    from taskloom.engine.durations_model import DurationModel

    assert DurationModel().knows_nothing
    assert DurationModel({"a": []}, {"b": None}).knows_nothing  # nothing usable either
    assert not DurationModel({"a": [2.0]}).knows_nothing
    assert not DurationModel(expected={"b": 30.0}).knows_nothing
