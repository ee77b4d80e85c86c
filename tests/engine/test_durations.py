"""Durations: what people write in workflow files, and the shortest way back."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskloom.engine.durations import MAX_DURATION, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("250ms", 0.25),
        ("90s", 90.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("1h30m", 5400.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        (".5s", 0.5),
        ("100ms", 0.1),
        ("10", 10.0),
        ("2.5", 2.5),
        (" 2 m ", 120.0),
        ("-5s", -5.0),
        (3, 3.0),
        (2.5, 2.5),
        (0, 0.0),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "bad", ["", "abc", "5x", "1h30", "m", "--5s", "1e", "inf", None, True, [5], float("nan")]
)
def test_bad_duration_is_a_value_error_naming_the_value(bad):
    with pytest.raises(ValueError) as caught:
        parse_duration(bad)
    assert repr(bad) in str(caught.value)


@pytest.mark.parametrize(
    "bad", ["1e400", "-1e400", "nan", "NaN", "1" + "0" * 400 + "d", "1e12", 1e12, 10**400]
)
def test_infinite_nan_or_absurd_durations_are_refused_naming_the_text(bad):
    with pytest.raises(ValueError) as caught:
        parse_duration(bad)
    message = str(caught.value)
    assert repr(bad)[:40] in message


def test_a_hundred_years_is_the_longest_duration():
    assert parse_duration(MAX_DURATION) == MAX_DURATION
    assert parse_duration("36524d") == 36524 * 86400.0
    with pytest.raises(ValueError, match="100 years"):
        parse_duration("36525.0001d")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.25, "250ms"),
        (1.5, "1.5s"),
        (60, "1m"),
        (90, "90s"),
        (3600, "1h"),
        (5400, "90m"),
        (5430, "5430s"),
        (5460, "91m"),
        (90061, "90061s"),
        (86400 * 2, "2d"),
        (-30, "-30s"),
    ],
)
def test_format_duration_is_the_shortest_form(seconds, text):
    assert format_duration(seconds) == text


@given(
    st.floats(
        min_value=-MAX_DURATION, max_value=MAX_DURATION, allow_nan=False, allow_infinity=False
    )
)
def test_format_duration_parses_back_exactly(seconds):
    assert parse_duration(format_duration(seconds)) == seconds


@given(st.integers(min_value=0, max_value=10**9))
def test_whole_seconds_always_get_a_unit(seconds):
    text = format_duration(seconds)
    assert not text[-1].isdigit()
    assert math.isclose(parse_duration(text), seconds)
