"""Outputs passed downstream: TASKLOOM_OUTPUT and a call's return value reach the
tasks that depend on it (engine/outputs.py)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

import pytest

from taskloom.engine import ManualClock, Scheduler, SyncExecutor, TaskState, current_run
from taskloom.engine.command import Command
from taskloom.engine.outputs import MAX_OUTPUT_BYTES, OutputError, parse_outputs
from taskloom.engine.store import SQLiteStore

S = TaskState
SEEN: dict = {}
HERE = __name__


def give():
    return {"rows": 17, "table": "sales"}


def give_text():
    return "done"


def give_an_object():
    return object()


def give_too_much():
    return {"blob": "x" * MAX_OUTPUT_BYTES}


def take():
    SEEN["inputs"] = current_run().inputs


def sh(script: str) -> Command:
    return Command(["sh", "-c", script])


@pytest.fixture
def sched(tmp_path):
    s = Scheduler(clock=ManualClock(), executor=SyncExecutor(), log_dir=str(tmp_path))
    SEEN.clear()
    yield s
    s.shutdown()


def test_a_calls_return_value_reaches_its_dependents(sched):
    sched.add(f"{HERE}:give", name="extract")  # call tasks: "module:function"
    sched.add(f"{HERE}:give_text", name="count")
    sched.add(f"{HERE}:give_an_object", name="model")
    sched.add(f"{HERE}:take", name="load", deps=["extract", "count", "model"])
    sched.start()
    assert sched.task("load").state is S.SUCCEEDED
    assert SEEN["inputs"] == {"extract": {"rows": 17, "table": "sales"}, "count": {"value": "done"}}
    assert sched.outputs("extract") == {"rows": 17, "table": "sales"}
    assert sched.outputs("model") is None  # an object of its own is no output


def test_a_commands_output_file_reaches_a_dependent_command(sched, tmp_path):
    seen = tmp_path / "seen"
    sched.add(
        sh('printf "rows=17\\n# a comment\\n\\nnote=a b\\n" > "$TASKLOOM_OUTPUT"'), name="ex-tract"
    )
    sched.add(
        sh(f'echo "$TASKLOOM_INPUT_EX_TRACT_ROWS|$TASKLOOM_INPUT_EX_TRACT_NOTE" > {seen}; '
           f'cat "$TASKLOOM_INPUTS" >> {seen}'),
        name="load",
        deps=["ex-tract"],
    )  # fmt: skip
    sched.start()
    assert sched.task("load").state is S.SUCCEEDED, sched.task("load").error
    first, second = seen.read_text().splitlines()
    assert first == "17|a b"
    assert json.loads(second) == {"ex-tract": {"rows": "17", "note": "a b"}}
    assert sched.outputs("ex-tract") == {"rows": "17", "note": "a b"}
    assert not list(tmp_path.glob("*.output")) and not list(tmp_path.glob("*.inputs.json"))


def test_json_outputs_and_no_outputs(sched):
    sched.add(sh('echo \'{"n": 3, "ok": true}\' > "$TASKLOOM_OUTPUT"'), name="j")
    sched.add(sh("true"), name="none")
    sched.start()
    assert sched.outputs("j") == {"n": 3, "ok": True}
    assert sched.outputs("none") is None


def test_too_much_or_a_bad_line_fails_the_attempt_with_the_reason(sched):
    sched.add(
        sh(f'head -c {MAX_OUTPUT_BYTES + 1} /dev/zero | tr "\\0" x > "$TASKLOOM_OUTPUT"'),
        name="big",
    )
    sched.add(sh('printf "a=1\\nnot a pair\\n" > "$TASKLOOM_OUTPUT"'), name="bad")
    sched.add(f"{HERE}:give_too_much", name="bigcall")
    sched.start()
    assert sched.task("big").state is S.FAILED
    assert f"more than {MAX_OUTPUT_BYTES} bytes of outputs" in sched.task("big").error
    assert "TASKLOOM_OUTPUT:2:1: expected KEY=value, got 'not a pair'" in sched.task("bad").error
    assert "more than 4096; write a big result to a file" in sched.task("bigcall").error


def test_parse_outputs_names_what_is_wrong():
    assert parse_outputs("a=1\nb = two=2\n") == {"a": "1", "b": " two=2"}
    with pytest.raises(OutputError, match=r"TASKLOOM_OUTPUT:1:7: not a JSON object"):
        parse_outputs('{"a": }')


def test_outputs_reach_the_downstream_task_in_a_resumed_run(tmp_path):
    """Real store, real processes: the run stops after extract; the resumed run does
    not run extract again and load still gets its outputs (read back from the store)."""
    db = tmp_path / "run.db"
    seen = tmp_path / "seen"
    count = tmp_path / "count"
    wall = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)

    def define(s):
        s.add(sh(f'echo x >> {count}; echo rows=17 > "$TASKLOOM_OUTPUT"'), name="extract")
        s.schedule_after(sh(f'echo "$TASKLOOM_INPUT_EXTRACT_ROWS" > {seen}'), 60.0, name="load",
                         deps=["extract"])  # fmt: skip

    first = Scheduler(clock=ManualClock(wall=wall), executor=SyncExecutor(),
                      store=SQLiteStore(db), log_dir=str(tmp_path))  # fmt: skip
    define(first)
    first.start()
    assert first.task("extract").state is S.SUCCEEDED
    assert first.task("load").state is S.SCHEDULED
    first.shutdown()
    first.store.close()

    clock = ManualClock(wall=wall)
    again = Scheduler(clock=clock, executor=SyncExecutor(), store=SQLiteStore(db),
                      log_dir=str(tmp_path))  # fmt: skip
    assert again.outputs("extract") == {"rows": "17"}
    again.start()
    clock.advance(60.0)
    assert again.task("load").state is S.SUCCEEDED, again.task("load").error
    assert seen.read_text() == "17\n"
    assert count.read_text() == "x\n"  # extract ran once
    again.shutdown()
    again.store.close()


def test_a_python_module_run_is_not_needed(sched):
    # The command may be any program: Python here, writing JSON.
    code = "import json, os; json.dump({'k': [1, 2]}, open(os.environ['TASKLOOM_OUTPUT'], 'w'))"
    sched.add(Command([sys.executable, "-c", code]), name="py")
    sched.start()
    assert sched.outputs("py") == {"k": [1, 2]}
