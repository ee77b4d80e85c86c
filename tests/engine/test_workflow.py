"""Workflow files: loading, every validation problem at once, saving, scheduling."""

from __future__ import annotations

import os
import sys
import textwrap
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from taskloom.engine import Call, ManualClock, RetryPolicy, TaskState
from taskloom.engine.command import Command
from taskloom.engine.definitions import TaskDefinition
from taskloom.engine.workflow import Problem, Workflow, WorkflowError, load, loads, save

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"

VALID = """
[workflow]
name = "nightly"
workers = 3
executor = "processes"

[tasks.extract]
command = ["python3", "extract.py"]
env = { MODE = "full" }
cron = "0 2 * * *"
timezone = "Europe/Berlin"
priority = 5
retry = { max_attempts = 3, base = "2s", factor = 2.0, max_delay = "1m", jitter = 0.1 }
timeout = "10m"
overlap = "queue"
misfire = "skip"
misfire_grace = "90s"
pos = [10, 20.5]

[tasks.load]
command = "./load.sh > out.txt"
shell = true
cwd = "."
deps = ["extract"]
trigger_rule = "all_done"
after = "250ms"

[tasks.notify]
call = "os.path:join"
args = { a = "x", b = "y" }
deps = ["load"]
at = "2026-12-01T02:00:00+01:00"

[tasks.poll]
command = ["true"]
every = "5m"
mode = "fixed_delay"
"""


def write(tmp_path: Path, text: str, name: str = "flow.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(tmp_path: Path, text: str) -> tuple[Path, list[Problem]]:
    path = write(tmp_path, text)
    with pytest.raises(WorkflowError) as caught:
        load(path)
    return path, caught.value.problems


def the_problem(tmp_path: Path, text: str, task: str | None, key: str | None) -> str:
    """The message of the one problem about ``task``/``key``; checks the line names them."""
    path, problems = problems_of(tmp_path, text)
    found = [p for p in problems if (p.task, p.key) == (task, key)]
    assert found, f"no problem for {task}.{key}: {[str(p) for p in problems]}"
    problem = found[0]
    assert problem.file == str(path)
    where = ".".join(part for part in ("tasks" if task else None, task, key) if part)
    assert str(problem) == f"{path}: {where}: {problem.message}"
    return problem.message


def task_toml(body: str, name: str = "job", command: bool = True) -> str:
    lines = [f"[tasks.{name}]"]
    if command:
        lines.append('command = ["true"]')
    return "\n".join(lines) + "\n" + textwrap.dedent(body)


# ---------------------------------------------------------------------- loading
def test_load_reads_every_key(tmp_path):
    workflow = load(write(tmp_path, VALID))
    assert (workflow.name, workflow.workers, workflow.executor) == ("nightly", 3, "processes")
    assert list(workflow.tasks) == ["extract", "load", "notify", "poll"]
    extract = workflow.tasks["extract"]
    assert extract.action.argv == ["python3", "extract.py"]
    assert extract.action.env == {"MODE": "full"}
    assert (extract.cron, extract.timezone, extract.priority) == ("0 2 * * *", "Europe/Berlin", 5)
    assert extract.retry == RetryPolicy(3, base=2.0, factor=2.0, max_delay=60.0, jitter=0.1)
    assert (extract.timeout, extract.overlap, extract.misfire) == (600.0, "queue", "skip")
    assert extract.misfire_grace == 90.0
    assert workflow.positions == {"extract": (10.0, 20.5)}
    load_task = workflow.tasks["load"]
    assert load_task.action == Command("./load.sh > out.txt", shell=True, cwd=str(tmp_path))
    assert (load_task.deps, load_task.trigger_rule, load_task.after) == (
        ("extract",),
        "all_done",
        0.25,
    )
    notify = workflow.tasks["notify"]
    assert notify.action == Call("os.path:join", {"a": "x", "b": "y"})
    assert notify.at == datetime(2026, 12, 1, 1, 0, tzinfo=UTC)
    poll = workflow.tasks["poll"]
    assert (poll.every, poll.mode, poll.schedule_kind, poll.recurring) == (
        300.0,
        "fixed_delay",
        "every",
        True,
    )
    assert workflow.tasks["load"].schedule_kind == "after"


def test_defaults_and_shorthands(tmp_path):
    workflow = load(
        write(tmp_path, '[tasks.a]\ncommand = ["true"]\nretry = 4\ndeps = []\n', name="x.toml")
    )
    assert (workflow.name, workflow.workers, workflow.executor) == ("x", 4, "threads")
    task = workflow.tasks["a"]
    assert task.retry == RetryPolicy(max_attempts=4)
    assert (task.schedule_kind, task.trigger_rule, task.priority) == ("deps", "all_success", 0)


def test_naive_at_uses_the_timezone_key(tmp_path):
    workflow = load(
        write(
            tmp_path,
            '[tasks.a]\ncommand = ["true"]\nat = 2026-07-01T08:00:00\ntimezone = "Europe/Berlin"\n',
        )
    )
    assert workflow.tasks["a"].at == datetime(2026, 7, 1, 6, 0, tzinfo=UTC)


def test_example_workflows_are_valid():
    names = sorted(path.stem for path in EXAMPLES.glob("*.toml"))
    assert {"etl", "flaky", "recurring"} <= set(names)
    for path in EXAMPLES.glob("*.toml"):
        assert load(path).tasks


# ---------------------------------------------------------------------- every problem at once
def test_every_problem_is_reported_at_once(tmp_path):
    text = """
    [tasks.a]
    command = []
    prioity = 1

    [tasks.b]
    command = ["true"]
    every = "-5s"
    deps = ["nope"]
    """
    path, problems = problems_of(tmp_path, text)
    assert {(p.task, p.key) for p in problems} == {
        ("a", "command"),
        ("a", "prioity"),
        ("b", "every"),
        ("b", "deps"),
    }
    with pytest.raises(WorkflowError) as caught:
        load(path)
    lines = str(caught.value).splitlines()
    assert len(lines) == 4
    assert all(line.startswith(f"{path}: tasks.") for line in lines)


def test_toml_syntax_error_gives_line_and_column(tmp_path):
    path, problems = problems_of(tmp_path, '[tasks.a]\ncommand = ["true"]\npriority = = 2\n')
    (problem,) = problems
    assert (problem.line, problem.column) == (3, 12)
    assert str(problem).startswith(f"{path}:3:12: TOML syntax error")


def test_unreadable_file_is_a_problem(tmp_path):
    with pytest.raises(WorkflowError, match="cannot read"):
        load(tmp_path / "missing.toml")


def test_unknown_task_key_suggests_the_right_one(tmp_path):
    message = the_problem(tmp_path, task_toml("prioity = 3\n"), "job", "prioity")
    assert message == "unknown key (did you mean 'priority'?)"


def test_unknown_retry_key_suggests_the_right_one(tmp_path):
    message = the_problem(tmp_path, task_toml('retry = { bas = "2s" }\n'), "job", "retry.bas")
    assert "did you mean 'base'" in message


def test_unknown_workflow_key(tmp_path):
    text = "[workflow]\nworkerz = 2\n" + task_toml("")
    message = the_problem(tmp_path, text, None, "workflow.workerz")
    assert "did you mean 'workers'" in message


def test_unknown_section(tmp_path):
    message = the_problem(tmp_path, "[task.a]\ncommand = ['x']\n", None, "task")
    assert "did you mean 'tasks'" in message


def test_no_tasks(tmp_path):
    assert "no tasks" in the_problem(tmp_path, '[workflow]\nname = "x"\n', None, "tasks")


@pytest.mark.parametrize(
    ("body", "key", "expected"),
    [
        ('priority = "high"', "priority", "must be an integer, got a string"),
        ("priority = 1.5", "priority", "must be an integer"),
        ("shell = 1", "shell", "must be true or false"),
        ("deps = [1, 2]", "deps", "list of task names"),
        ("env = { A = 1 }", "env.A", "must be a string, got an integer"),
        ('env = "A=1"', "env", "must be a table"),
        ('timeout = "soon"', "timeout", "bad duration 'soon'"),
        ("timeout = true", "timeout", "bad duration True"),
        ("pos = [1]", "pos", "must be [x, y]"),
        ("group = 3", "group", "must be a non-empty string, got an integer"),
        ('group = "  "', "group", "must be a non-empty string"),
        ('group = "a\\u0007b"', "group", "control characters"),
        ('retry = "twice"', "retry", "must be a table"),
        ("retry = { jitter = 2 }", "retry.jitter", "fraction"),
        ("retry = { max_attempts = 0 }", "retry.max_attempts", "integer >= 1"),
        ('cwd = "no/such/dir"', "cwd", "does not exist"),
        ("at = 2026-12-01", "at", "a date without a time"),
        ('at = "next tuesday"', "at", "is not a date and time"),
        ('at = "2026-12-01T02:00:00"', "at", "needs a UTC offset"),
    ],
)
def test_wrong_type_or_value(tmp_path, body, key, expected):
    assert expected in the_problem(tmp_path, task_toml(body + "\n"), "job", key)


def test_bad_workflow_settings(tmp_path):
    text = '[workflow]\nworkers = 0\nexecutor = "gpu"\n' + task_toml("")
    assert "integer >= 1" in the_problem(tmp_path, text, None, "workflow.workers")
    assert "dask://HOST:PORT" in the_problem(tmp_path, text, None, "workflow.executor")


def test_unknown_dependency(tmp_path):
    text = task_toml('deps = ["extrct"]\n', "load") + task_toml("", "extract")
    message = the_problem(tmp_path, text, "load", "deps")
    assert message == "unknown task 'extrct' (did you mean 'extract'?)"


def test_cycle_is_named_with_its_path(tmp_path):
    text = (
        task_toml('deps = ["c"]\n', "a")
        + task_toml('deps = ["a"]\n', "b")
        + task_toml('deps = ["b"]\n', "c")
    )
    message = the_problem(tmp_path, text, "a", "deps")
    assert "dependency cycle: a -> b -> c -> a" in message


def test_self_dependency_is_a_cycle(tmp_path):
    message = the_problem(tmp_path, task_toml('deps = ["job"]\n'), "job", "deps")
    assert "dependency cycle: job -> job" in message


def test_two_separate_cycles_are_both_reported(tmp_path):
    text = (
        task_toml('deps = ["b"]\n', "a")
        + task_toml('deps = ["a"]\n', "b")
        + task_toml('deps = ["d"]\n', "c")
        + task_toml('deps = ["c"]\n', "d")
    )
    _, problems = problems_of(tmp_path, text)
    assert sorted(p.task for p in problems if "cycle" in p.message) == ["a", "c"]


def test_bad_cron_expression(tmp_path):
    message = the_problem(tmp_path, task_toml('cron = "61 * * * *"\n'), "job", "cron")
    assert "bad cron expression '61 * * * *'" in message


def test_bad_time_zone(tmp_path):
    text = task_toml('cron = "0 2 * * *"\ntimezone = "Europe/Berln"\n')
    message = the_problem(tmp_path, text, "job", "timezone")
    assert "unknown time zone 'Europe/Berln'" in message and "Europe/Berlin" in message


def test_a_tzdata_folder_is_an_unknown_time_zone(tmp_path):
    # "Europe" is a folder of zone files: ZoneInfo raised IsADirectoryError
    text = task_toml('cron = "0 2 * * *"\ntimezone = "Europe"\n')
    message = the_problem(tmp_path, text, "job", "timezone")
    assert message.startswith("unknown time zone 'Europe'")


@pytest.mark.parametrize("interval", ['"0s"', '"-5m"', "0", "-1"])
def test_zero_or_negative_interval(tmp_path, interval):
    assert "must be > 0" in the_problem(
        tmp_path, task_toml(f"every = {interval}\n"), "job", "every"
    )


def test_negative_delay(tmp_path):
    assert "must be >= 0" in the_problem(tmp_path, task_toml('after = "-1s"\n'), "job", "after")


def test_zero_timeout(tmp_path):
    assert "must be > 0" in the_problem(tmp_path, task_toml("timeout = 0\n"), "job", "timeout")


@pytest.mark.parametrize("command", ["[]", '""', '["", "x"]'])
def test_empty_command(tmp_path, command):
    text = task_toml(
        f"command = {command}\nshell = true\n" if command == '""' else f"command = {command}\n",
        command=False,
    )
    assert "empty" in the_problem(tmp_path, text, "job", "command")


def test_command_string_needs_shell(tmp_path):
    message = the_problem(
        tmp_path, task_toml('command = "make all"\n', command=False), "job", "command"
    )
    assert "needs shell = true" in message


def test_shell_with_argv_list(tmp_path):
    assert "takes a command string" in the_problem(
        tmp_path, task_toml("shell = true\n"), "job", "shell"
    )


def test_both_command_and_call(tmp_path):
    message = the_problem(tmp_path, task_toml('call = "os:getcwd"\n'), "job", "call")
    assert message == "give either command or call, not both"


def test_neither_command_nor_call(tmp_path):
    message = the_problem(tmp_path, task_toml("priority = 1\n", command=False), "job", None)
    assert "needs a command" in message


def test_malformed_call_reference(tmp_path):
    text = task_toml('call = "not a ref"\n', command=False)
    assert "package.module:function" in the_problem(tmp_path, text, "job", "call")


def test_args_without_call(tmp_path):
    assert "only to a call" in the_problem(tmp_path, task_toml("args = { a = 1 }\n"), "job", "args")


def test_more_than_one_time_key(tmp_path):
    message = the_problem(tmp_path, task_toml('after = "5s"\nevery = "1m"\n'), "job", "every")
    assert "only one of at, after, every, cron" in message and "after and every" in message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("trigger_rule", "al_success"),
        ("overlap", "never"),
        ("misfire", "run_twice"),
        ("mode", "fixed"),
    ],
)
def test_bad_choice_values(tmp_path, key, value):
    text = task_toml(f'every = "1m"\n{key} = "{value}"\n')
    message = the_problem(tmp_path, text, "job", key)
    assert f"got {value!r}" in message and "must be one of" in message


def test_recurring_options_on_a_one_shot_task(tmp_path):
    text = task_toml('overlap = "skip"\nmode = "fixed_rate"\n')
    assert "recurring" in the_problem(tmp_path, text, "job", "overlap")
    assert "every" in the_problem(tmp_path, text, "job", "mode")


def test_task_name_with_dots_is_quoted(tmp_path):
    path, problems = problems_of(tmp_path, '[tasks."a.b"]\ncommand = ["x"]\nprioity = 1\n')
    assert (
        str(problems[0]) == f"{path}: tasks.\"a.b\".prioity: unknown key (did you mean 'priority'?)"
    )


# ---------------------------------------------------------------------- saving
def test_round_trip(tmp_path):
    original = load(write(tmp_path, VALID))
    saved = save(original, tmp_path / "copy.toml")
    assert load(saved) == original
    assert load(save(load(saved), tmp_path / "again.toml")) == original


def test_group_is_read_saved_and_ignored_by_the_engine(tmp_path):
    path = write(tmp_path, task_toml('group = "nightly"\n') + task_toml("", "other"))
    workflow = load(path)
    assert workflow.tasks["job"].group == "nightly" and workflow.tasks["other"].group is None
    assert load(save(workflow, tmp_path / "copy.toml")) == workflow
    assert 'group = "nightly"' in (tmp_path / "copy.toml").read_text()
    assert "group" not in workflow.tasks["job"].to_row()  # a label for the window only
    plain = replace(workflow.tasks["job"], group=None)
    assert plain.fingerprint() == workflow.tasks["job"].fingerprint()  # resumes unchanged


def test_round_trip_of_a_built_workflow(tmp_path):
    built = Workflow(
        "made",
        workers=2,
        tasks={
            "a": TaskDefinition(
                "a", Command(["echo", "a b"], cwd=str(tmp_path)), every=1.5, retry=RetryPolicy()
            ),
            "b.c": TaskDefinition("b.c", Call("os:getcwd"), deps=("a",), timeout=0.25, priority=-3),
        },
        positions={"a": (1.0, 2.0)},
        path=tmp_path / "made.toml",
    )
    assert load(save(built, tmp_path / "made.toml")) == built
    text = (tmp_path / "made.toml").read_text()
    assert 'every = "1.5s"' in text and 'timeout = "250ms"' in text and '[tasks."b.c"]' in text


def test_example_workflows_round_trip(tmp_path):
    for path in EXAMPLES.glob("*.toml"):
        workflow = load(path)
        assert load(save(workflow, tmp_path / path.name)) == workflow


def test_save_replaces_atomically_and_keeps_the_original_on_failure(tmp_path):
    path = write(tmp_path, VALID)
    before = path.read_text()
    workflow = load(path)
    notify = workflow.tasks["notify"]  # a set has no TOML form:
    workflow.tasks["notify"] = replace(notify, action=Call("os.path:join", {"bad": {1, 2}}))
    with pytest.raises(TypeError):
        save(workflow)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flow.toml"]  # no temp file left


def test_save_keeps_the_file_mode(tmp_path):
    path = write(tmp_path, VALID)
    os.chmod(path, 0o600)
    workflow = load(path)
    workflow.set_position("poll", 5, 6)
    save(workflow)
    assert (path.stat().st_mode & 0o777) == 0o600
    assert load(path).positions["poll"] == (5.0, 6.0)


def test_loads_without_a_file():
    workflow = loads('[tasks.a]\ncommand = ["true"]\n')
    assert workflow.name == "workflow" and workflow.path is None


# ---------------------------------------------------------------------- scheduling
def test_schedule_into_uses_the_right_engine_call(make_sched, tmp_path):
    clock = ManualClock(wall=datetime(2026, 11, 30, 0, 0, tzinfo=UTC))
    s = make_sched(clock=clock, start=False)
    at = clock.wall() + timedelta(hours=1)
    text = f"""
    [tasks.first]
    command = ["true"]
    at = {at.astimezone(timezone(timedelta(hours=1))).isoformat()}
    priority = 7

    [tasks.later]
    command = ["true"]
    after = "90s"
    deps = ["first"]

    [tasks.tick]
    command = ["true"]
    every = "5m"

    [tasks.nightly]
    call = "os:getcwd"
    cron = "0 2 * * *"
    timezone = "Europe/Berlin"

    [tasks.last]
    command = ["true"]
    deps = ["later", "first"]
    trigger_rule = "all_done"
    retry = {{ max_attempts = 2 }}
    timeout = "1m"
    """
    ids = load(write(tmp_path, text)).schedule_into(s)
    names = ("first", "later", "tick", "nightly", "last")
    assert ids == {name: name for name in names}
    first, later, tick, nightly, last = (s.task(name) for name in names)
    assert (first.state, first.run_at, first.priority) == (TaskState.SCHEDULED, 3600.0, 7)
    assert later.deps == ("first",) and later.state is TaskState.PENDING
    assert tick.recurring and tick.run_at == 300.0
    assert nightly.recurring and nightly.run_at == 3600.0  # 02:00 Berlin = 01:00 UTC
    assert set(last.deps) == {"later", "first"}


def test_schedule_into_runs_a_diamond_in_order(make_sched, recorder, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()

    def step(name):
        return (
            f'command = ["{sys.executable}", "-c", "open(\\"{name}\\", \\"w\\")"]\ncwd = "marks"\n'
        )

    text = (
        f"[tasks.extract]\n{step('extract')}"
        f"[tasks.a]\n{step('a')}deps = ['extract']\n"
        f"[tasks.b]\n{step('b')}deps = ['extract']\n"
        f"[tasks.load]\n{step('load')}deps = ['a', 'b']\n"
    )
    s = make_sched(start=False)
    load(write(tmp_path, text)).schedule_into(s)
    s.start()
    assert s.wait(30)
    assert {t.id: t.state for t in s.tasks()} == dict.fromkeys(
        ("extract", "a", "b", "load"), TaskState.SUCCEEDED
    )
    assert sorted(p.name for p in marks.iterdir()) == ["a", "b", "extract", "load"]


def test_actions_are_commands_with_resolved_cwd_or_calls(tmp_path):
    workflow = load(write(tmp_path, VALID))
    load_action = workflow.tasks["load"].action
    assert load_action == Command("./load.sh > out.txt", shell=True, cwd=str(tmp_path / "."))
    extract_action = workflow.tasks["extract"].action
    assert extract_action.cwd == str(tmp_path) and extract_action.env == {"MODE": "full"}
    assert workflow.tasks["notify"].action == Call("os.path:join", {"a": "x", "b": "y"})


def test_order_puts_each_task_after_its_deps_else_in_file_order():
    """Written in dependency order (most files): the file's order, in one pass; else
    the first task (in file order) whose dependencies are placed, each time."""
    import random

    from taskloom.engine.workflow import loads

    def order_of(names_deps):
        text = "".join(
            f'[tasks.{tid}]\ncommand = ["true"]\ndeps = {list(deps)!r}\n'.replace("'", '"')
            for tid, deps in names_deps
        )
        return loads(text).order()

    def reference(names_deps):  # the first ready task in file order, each time
        placed: list[str] = []
        left = list(names_deps)
        while left:
            tid, deps = next((t, d) for t, d in left if set(d) <= set(placed))
            placed.append(tid)
            left.remove((tid, deps))
        return placed

    rng = random.Random(25)
    tasks = []
    for i in range(300):
        deps = sorted({f"t{rng.randrange(i)}" for _ in range(rng.randint(0, 3))}) if i else []
        tasks.append((f"t{i}", deps))
    assert order_of(tasks) == [tid for tid, _ in tasks]  # already in order
    rng.shuffle(tasks)
    assert order_of(tasks) == reference(tasks)
