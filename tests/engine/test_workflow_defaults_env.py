"""Issue 26 keys in workflow files: [workflow.defaults], [workflow] timeout, env_file
and secret_env: read, checked with a place for every problem, written back."""

from __future__ import annotations

import textwrap

import pytest

from taskloom.engine.command import Command
from taskloom.engine.envfile import EnvFileError, parse_env
from taskloom.engine.workflow import WorkflowError, dumps, load, loads
from taskloom.engine.workflow_text import update_text

DEFAULTS = """
[workflow]
timeout = "2h"
secret_env = ["API_TOKEN"]

[pools]
db = 2

[workflow.defaults]
retry = 3
timeout = "10m"
priority = 5
cwd = "work"
env = { MODE = "prod", REGION = "eu" }
pool = "db"
jitter = "5m"

[tasks.a]
command = ["true"]
env = { MODE = "dev" }
timeout = "1m"

[tasks.b]
call = "os:getcwd"
priority = 1
deps = ["a"]
secret_env = ["DB_PASSWORD"]
"""


def write(folder, name: str, text: str):
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def problems_of(path) -> list[str]:
    """What ``taskloom validate`` prints: every problem with its file:line:column."""
    from taskloom.listing import located

    with pytest.raises(WorkflowError) as caught:
        load(path)
    return [line for _, line in located(path, caught.value.problems)]


def test_defaults_fill_what_a_task_does_not_say_and_its_own_key_wins(tmp_path):
    (tmp_path / "work").mkdir()
    workflow = load(write(tmp_path, "flow.toml", DEFAULTS))
    a, b = workflow.tasks["a"], workflow.tasks["b"]
    assert a.timeout == 60.0 and b.timeout == 600.0  # a's own timeout wins
    assert a.priority == 5 and b.priority == 1
    assert a.retry is not None and a.retry.max_attempts == 3
    assert b.retry is not None and b.retry.max_attempts == 3
    assert isinstance(a.action, Command)
    assert a.action.cwd == str(tmp_path / "work")
    assert a.action.env == {"MODE": "dev", "REGION": "eu"}  # per variable: the task's wins
    assert a.pool == b.pool == "db" and a.jitter == b.jitter == 300.0  # keys2's keys too
    assert workflow.timeout == 7200.0
    assert workflow.secret_names() == ("API_TOKEN", "DB_PASSWORD")
    # a call takes no cwd or env: the defaults give it none (and no problem)
    assert workflow.tasks["b"].action.ref == "os:getcwd"


def test_a_workflow_with_defaults_reads_back_the_same_from_dumps(tmp_path):
    (tmp_path / "work").mkdir()
    workflow = load(write(tmp_path, "flow.toml", DEFAULTS))
    text = dumps(workflow)
    assert 'timeout = "2h"' in text.split("[tasks.")[0]
    assert loads(text, tmp_path / "flow.toml") == workflow


def test_saving_from_the_window_keeps_defaults_out_of_the_tasks(tmp_path):
    """update_text reads a task's table with the defaults and env files: an unchanged
    task stays byte for byte, a changed one gets only the changed key."""
    (tmp_path / "work").mkdir()
    write(tmp_path, ".env", "TOKEN_URL=https://example.invalid\n")
    text = textwrap.dedent(DEFAULTS).replace(
        "[workflow]\n", '[workflow]\nname = "flow"\nenv_file = ".env"\n', 1
    )
    path = write(tmp_path, "flow.toml", text)
    workflow = load(path)
    assert workflow.tasks["a"].action.env["TOKEN_URL"] == "https://example.invalid"
    assert update_text(path.read_text(), workflow, tmp_path) == path.read_text()
    from dataclasses import replace

    workflow.tasks["a"] = replace(workflow.tasks["a"], priority=9)
    saved = update_text(path.read_text(), workflow, tmp_path)
    changed = [line for line in saved.splitlines() if line not in path.read_text().splitlines()]
    assert changed == ["priority = 9"]
    assert load(write(tmp_path, "again.toml", saved)).tasks["a"].priority == 9


def test_bad_defaults_are_named_with_their_place(tmp_path):
    path = write(
        tmp_path,
        "flow.toml",
        """
        [workflow]
        timeout = "0s"

        [workflow.defaults]
        retry = 0
        colour = "red"
        timeout = "soon"

        [tasks.a]
        command = ["true"]
        """,
    )
    found = problems_of(path)
    assert f"{path}:2:1: workflow.timeout: must be > 0, got '0s'" in found
    assert f"{path}:5:1: workflow.defaults.retry.max_attempts: must be an integer >= 1, got 0" in (
        found
    )
    assert any(p.startswith(f"{path}:6:1: workflow.defaults.colour: unknown key") for p in found)
    assert any(p.startswith(f"{path}:7:1: workflow.defaults.timeout: bad duration") for p in found)
    assert len(found) == 4  # a bad default is named once, not once per task


def test_an_env_file_is_read_relative_to_the_workflow_and_the_tasks_own_wins(tmp_path):
    write(tmp_path, ".env", "# shared\nexport A=1\nB='two words'\nC=\"x\\ny\" # note\n")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "a.env", "B=from-task-file\n")
    path = write(
        tmp_path,
        "flow.toml",
        """
        [workflow]
        env_file = ".env"

        [tasks.a]
        command = ["true"]
        env_file = "sub/a.env"
        env = { C = "own" }

        [tasks.b]
        command = ["true"]
        """,
    )
    workflow = load(path)
    assert workflow.tasks["a"].action.env == {"A": "1", "B": "from-task-file", "C": "own"}
    assert workflow.tasks["b"].action.env == {"A": "1", "B": "two words", "C": "x\ny"}


def test_a_bad_env_file_line_is_named_as_file_line_column(tmp_path):
    env = write(tmp_path, "bad.env", 'A=1\nB="open\n')
    path = write(
        tmp_path,
        "flow.toml",
        """
        [tasks.a]
        command = ["true"]
        env_file = "bad.env"

        [tasks.b]
        command = ["true"]
        env_file = "missing.env"
        """,
    )
    found = problems_of(path)
    assert found[0] == f'{env}:2:3: env file: no closing " on this line'
    assert found[1].startswith(f"{path}:7:1: tasks.b.env_file: cannot read ")
    assert "missing.env" in found[1] and len(found) == 2


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("=x", (1, 1), "expected a variable name (KEY=value)"),
        ("A x", (1, 3), "expected '=' after A"),
        ('A="x" y', (1, 7), "text after the closing quote"),
        ('ok=1\n  A="\\q"', (2, 6), "unknown escape \\q"),
        ('export  K = "x', (1, 13), 'no closing " on this line'),
    ],
)
def test_env_file_syntax_errors_point_at_the_character(text, where, message):
    with pytest.raises(EnvFileError) as caught:
        parse_env(text, "f.env")
    assert (caught.value.line, caught.value.column) == where
    assert str(caught.value) == f"f.env:{where[0]}:{where[1]}: {message}"


def test_secret_env_names_are_checked(tmp_path):
    path = write(
        tmp_path,
        "flow.toml",
        """
        [workflow]
        secret_env = ["API-TOKEN"]

        [tasks.a]
        command = ["true"]
        secret_env = "not a list of names"
        """,
    )
    found = problems_of(path)
    assert found == [
        f"{path}:2:1: workflow.secret_env: 'API-TOKEN' is not a variable name (letters, digits, _)",
        f"{path}:6:1: tasks.a.secret_env: 'not a list of names' is not a variable name "
        "(letters, digits, _)",
    ]


def test_secrets_are_read_from_the_environment_and_masked_longest_first():
    from taskloom.engine.secret_env import MissingSecrets, read_secrets, redact

    environ = {"API_TOKEN": "abc123", "LONGER": "abc123-and-more"}
    assert read_secrets(["API_TOKEN", "LONGER"], environ) == environ
    with pytest.raises(MissingSecrets) as caught:
        read_secrets(["API_TOKEN", "DB_PASSWORD", "GONE"], environ)
    assert caught.value.names == ["DB_PASSWORD", "GONE"]
    values = ["abc123-and-more", "abc123"]
    assert redact("x abc123-and-more y abc123", values) == "x *** y ***"


def test_a_secret_never_reaches_an_attempts_record(sched, clock):
    """A call task's error, traceback and output are masked as the store would get them."""
    import os

    from taskloom.engine import current_run, secret_env

    value = "tl-secret-" + os.urandom(6).hex()

    def leaky():
        run = current_run()
        assert run is not None
        run.output = f"the token is {value}"
        raise RuntimeError(f"refused: {value}")

    secret_env.provide({"API_TOKEN": value})
    try:
        sched.add(leaky, name="leaky")
        (attempt,) = sched.attempts("leaky")
    finally:
        secret_env.forget()
    assert attempt.error == "RuntimeError: refused: ***"
    assert attempt.output == "the token is ***"
    assert value not in (attempt.traceback or "") and "refused: ***" in attempt.traceback
    assert sched.task("leaky").error == "RuntimeError: refused: ***"
