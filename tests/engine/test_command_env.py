"""What a command knows of its attempt: TASKLOOM_TASK, _ATTEMPT, _SCHEDULED_AT (the
occurrence's nominal time, also after a catch-up) and the run's variables (env=)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta

from taskloom.engine import ManualClock, RetryPolicy, Scheduler, SyncExecutor
from taskloom.engine.clock import iso_time
from taskloom.engine.command import Command

PY = sys.executable
DUMP = (
    "import json, os, sys; "
    "keys = [k for k in os.environ if k.startswith('TASKLOOM_') and k != 'TASKLOOM_OWNER'];"
    "open(sys.argv[1], 'a').write(json.dumps({k: os.environ[k] for k in keys}) + '\\n');"
    "sys.exit(int(sys.argv[2]))"
)


def dumper(path, code: int = 0) -> Command:
    return Command([PY, "-c", DUMP, str(path), str(code)])


def seen(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def local_iso(moment: datetime) -> str:
    return iso_time(moment.timestamp())


def test_a_cron_command_is_told_its_occurrence_and_the_run_env(tmp_path):
    start = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
    clock = ManualClock(wall=start)
    out = tmp_path / "env.jsonl"
    s = Scheduler(
        clock=clock,
        executor=SyncExecutor(),
        env={"TASKLOOM_RUN": "7", "TASKLOOM_PARAM_DAY": "2026-12-01"},
        log_dir=str(tmp_path),
    )
    s.schedule_cron(dumper(out), "30 2 * * *", name="backup")
    s.start()
    clock.advance(30 * 60 + 3)  # 02:30:03: the 02:30 run
    [first] = seen(out)
    assert first.pop("TASKLOOM_OUTPUT").endswith(".output")  # where its outputs may go
    assert first == {
        "TASKLOOM_RUN": "7",
        "TASKLOOM_PARAM_DAY": "2026-12-01",
        "TASKLOOM_TASK": "backup",
        "TASKLOOM_ATTEMPT": "1",
        "TASKLOOM_SCHEDULED_AT": local_iso(start + timedelta(minutes=30)),
    }
    assert s.scheduled_at("backup") == start + timedelta(minutes=30)
    s.shutdown()


def test_a_run_caught_up_after_a_suspend_knows_which_occurrence_it_is(tmp_path):
    start = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
    clock = ManualClock(wall=start)
    out = tmp_path / "env.jsonl"
    s = Scheduler(clock=clock, executor=SyncExecutor(), log_dir=str(tmp_path))
    s.schedule_cron(dumper(out), "30 2 * * *", name="backup", misfire="run_once")
    s.start()
    # A suspend over two nights: the wall clock jumps, the monotonic one hardly moves.
    clock.jump_wall(2 * 86400 + 5 * 3600)
    clock.advance(1)
    [caught_up] = seen(out)
    # run_once: the run stands for the missed ones, and says it is the latest of them.
    assert caught_up["TASKLOOM_SCHEDULED_AT"] == local_iso(start + timedelta(days=2, hours=2.5))


def test_a_retry_keeps_the_occurrence_time_and_counts_the_attempt(tmp_path):
    clock = ManualClock(wall=datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    out = tmp_path / "env.jsonl"
    s = Scheduler(clock=clock, executor=SyncExecutor(), log_dir=str(tmp_path))
    at = datetime(2026, 12, 1, 9, 15, tzinfo=UTC)
    s.schedule(dumper(out, 3), run_at=at, name="load", retry=RetryPolicy(2, base=10, jitter=0))
    s.start()
    clock.advance(15 * 60)
    clock.advance(10)
    first, second = seen(out)
    assert [first["TASKLOOM_ATTEMPT"], second["TASKLOOM_ATTEMPT"]] == ["1", "2"]
    assert first["TASKLOOM_SCHEDULED_AT"] == second["TASKLOOM_SCHEDULED_AT"] == local_iso(at)


def test_a_task_with_no_time_is_told_its_first_start_on_every_attempt(tmp_path):
    clock = ManualClock(wall=datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    out = tmp_path / "env.jsonl"
    s = Scheduler(clock=clock, executor=SyncExecutor(), log_dir=str(tmp_path))
    s.add(dumper(out, 1), name="after", retry=RetryPolicy(2, base=60, jitter=0))
    s.start()
    clock.advance(60)
    first, second = seen(out)
    # Attempt 2, a minute later, is told the time attempt 1 started: the same occurrence.
    started = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    assert first["TASKLOOM_SCHEDULED_AT"] == second["TASKLOOM_SCHEDULED_AT"] == local_iso(started)
    assert s.scheduled_at("after") == started
