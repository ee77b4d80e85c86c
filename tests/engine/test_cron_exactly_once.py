"""Every cron occurrence runs exactly once, whatever the skew between wall and monotonic time.

A ``ManualClock`` is driven occurrence by occurrence while its wall clock wobbles by
sub-millisecond steps (never a jump: the wall stays within ``MAX_SKEW`` of where it
started), sometimes waking exactly at the monotonic due with the wall a hair before
or after the occurrence. The expected occurrences come from ``CronTrigger.next_n``.
"""

from __future__ import annotations

import math
import random
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskloom.engine import ManualClock, Scheduler, SyncExecutor
from taskloom.engine.command import Command
from taskloom.engine.cron import CronTrigger

# The DST changes of 2026, as UTC instants.
TRANSITIONS = {
    "Europe/Berlin": (datetime(2026, 3, 29, 1, tzinfo=UTC), datetime(2026, 10, 25, 1, tzinfo=UTC)),
    "America/New_York": (datetime(2026, 3, 8, 7, tzinfo=UTC), datetime(2026, 11, 1, 6, tzinfo=UTC)),
}
GAPS = {"* * * * *": 60, "*/5 * * * *": 300, "0 * * * *": 3600, "30 2 * * *": 86400}
JITTER = 0.001  # seconds the wall clock may wobble between two steps
MAX_SKEW = 0.4  # total wobble stays well under the 1 s that counts as a wall jump
MARGIN = 2.0  # a step that lands between occurrences keeps this far from both


def drive(expr, tz, start_wall, mono_start, skew, occurrences, rng) -> None:
    """Run ``occurrences`` occurrences of ``expr``; assert after each step what ran."""
    clock = ManualClock(start=mono_start, wall=start_wall - timedelta(seconds=mono_start))
    clock.jump_wall(skew)
    s = Scheduler(clock=clock, executor=SyncExecutor())
    runs: list[datetime] = []
    s.schedule_cron(lambda: runs.append(clock.wall()), expr, tz=tz, misfire="run_all", name="job")
    # In UTC: arithmetic on datetimes in one zone is local time, wrong across DST.
    expected = [
        t.astimezone(UTC) for t in CronTrigger(expr, tz).next_n(clock.wall(), occurrences + 1)
    ]
    s.start()

    def wobble():
        nonlocal skew
        step = rng.uniform(-JITTER, JITTER)
        if abs(skew + step) > MAX_SKEW:
            step = -step
        skew += step
        clock.jump_wall(step)

    done = 0
    while done < occurrences:
        if rng.random() < 0.3:
            # Wake exactly at the monotonic due, the wall a hair before or after it.
            wobble()
            due = s.upcoming()[0].run_at
            delta = due - clock.now()
            while clock.now() + delta < due:  # float rounding must not stop short
                delta = math.nextafter(delta, math.inf)
            clock.advance(max(0.0, delta))
            done += 1
        else:
            # Land between two occurrences, passing one or a few (run_all runs each).
            m = min(occurrences - done, rng.choice((1, 1, 1, 2, 3)))
            lo = expected[done + m - 1] + timedelta(seconds=MARGIN)
            hi = expected[done + m] - timedelta(seconds=MARGIN)
            target = lo + (hi - lo) * rng.random()
            clock.advance(max(0.0, (target - clock.wall()).total_seconds()))
            wobble()
            done += m
        assert len(runs) == done, (expected[done - 1], runs[-3:])
    s.shutdown()
    assert len(runs) == occurrences
    for ran, occurrence in zip(runs, expected, strict=False):
        assert ran >= occurrence - timedelta(seconds=1), (ran, occurrence)  # never early


@settings(max_examples=80, deadline=None)
@given(
    tz=st.sampled_from(sorted(TRANSITIONS)),
    which=st.sampled_from((0, 1)),
    expr=st.sampled_from(sorted(GAPS)),
    occurrences=st.integers(3, 150),
    before=st.floats(0.0, 1.0),
    mono_start=st.floats(0.0, 1e7),
    skew=st.floats(-MAX_SKEW, MAX_SKEW),
    rng=st.randoms(use_true_random=False),
)
@pytest.mark.slow
def test_each_occurrence_runs_once_across_dst_with_wall_jitter(
    tz, which, expr, occurrences, before, mono_start, skew, rng
):
    # Start so that the DST change falls inside the simulated window.
    span = before * occurrences * GAPS[expr]
    start = TRANSITIONS[tz][which] - timedelta(seconds=span)
    drive(expr, tz, start, mono_start, skew, occurrences, rng)


@pytest.mark.slow
def test_ten_thousand_minutes_each_run_once():
    # A week of "* * * * *" across Berlin's fall-back, minute by minute with jitter.
    start = datetime(2026, 10, 21, 11, 59, 13, 250000, tzinfo=UTC)
    drive("* * * * *", "Europe/Berlin", start, 12345.678, -0.2, 10_000, random.Random(7))


STAMP = (
    "import sys, datetime; "
    "open(sys.argv[1], 'a').write(datetime.datetime.now(datetime.timezone.utc).isoformat() + '\\n')"
)


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_real_clock_runs_a_command_once_per_minute(tmp_path):
    out = tmp_path / "runs.txt"
    minute = timedelta(minutes=1)
    if datetime.now(UTC).second >= 59:  # which minute comes first must not be a race
        time.sleep(1.5)
    s = Scheduler(workers=4, log_dir=str(tmp_path / "logs"))
    # parallel: a duplicate occurrence while the first command runs is not hidden by skip
    s.schedule_cron(
        Command([sys.executable, "-c", STAMP, str(out)]), "* * * * *", overlap="parallel"
    )
    first = datetime.now(UTC).replace(second=0, microsecond=0) + minute
    boundaries = [first, first + minute]
    s.start()

    def stamps():
        text = out.read_text() if out.exists() else ""
        return [datetime.fromisoformat(line) for line in text.splitlines()]

    # Past the second boundary, and a few seconds more for a duplicate to show up.
    settled = boundaries[-1] + timedelta(seconds=5)
    deadline = time.monotonic() + 190
    while time.monotonic() < deadline:
        if datetime.now(UTC) >= settled and len(stamps()) >= len(boundaries):
            break
        time.sleep(0.2)
    s.shutdown()
    runs = stamps()
    assert len(runs) == len(boundaries), runs
    for ran, boundary in zip(runs, boundaries, strict=True):
        assert boundary <= ran < boundary + minute, (ran, boundary)
