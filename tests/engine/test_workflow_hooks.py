"""Hook keys in workflow files: read, checked with every other key, written back."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from taskloom.engine.hooks import HookSettings
from taskloom.engine.workflow import WorkflowError, dumps, loads
from taskloom.engine.workflow_text import update_text

HOOKED = """
[workflow]
name = "nightly"
on_failure = ["notify.sh", "--urgent"]
on_success = "echo ok"
on_finish = "mail -s done me"
hook_timeout = "10s"

[workflow.notify]
desktop = true
webhook = "https://example.invalid/hook"
events = ["failure"]

[tasks.extract]
command = ["true"]
on_failure = "page-me"  # this task's own

[tasks.load]
command = ["true"]
deps = ["extract"]
"""


def test_hooks_are_read_and_a_tasks_own_wins():
    workflow = loads(textwrap.dedent(HOOKED), "flow.toml")
    hooks = workflow.hooks
    assert hooks.commands == {
        "failure": ("notify.sh", "--urgent"),
        "success": "echo ok",
        "finish": "mail -s done me",
    }
    assert hooks.timeout == 10.0
    assert hooks.desktop and hooks.webhook == "https://example.invalid/hook"
    assert hooks.notify_events == ("failure",)
    assert hooks.command_for("failure", "extract") == "page-me"
    assert hooks.command_for("failure", "load") == ("notify.sh", "--urgent")
    assert hooks.command_for("retry", "load") is None
    assert hooks.sinks_for("failure") and not hooks.sinks_for("finish")


def test_a_file_without_hooks_has_none():
    workflow = loads("[tasks.a]\ncommand = ['true']\n")
    assert workflow.hooks == HookSettings() and workflow.hooks.empty


def test_hooks_are_written_back_and_read_the_same():
    workflow = loads(textwrap.dedent(HOOKED), "flow.toml")
    assert loads(dumps(workflow), "flow.toml") == workflow


def test_hooks_do_not_change_a_tasks_fingerprint():
    plain = loads("[tasks.a]\ncommand = ['true']\n", "flow.toml")
    hooked = loads("[tasks.a]\ncommand = ['true']\non_failure = 'x'\n", "flow.toml")
    assert plain.fingerprints() == hooked.fingerprints()  # a resume does not redo it


def test_the_window_saving_an_edit_keeps_the_hooks_as_written():
    text = textwrap.dedent(HOOKED)
    workflow = loads(text, "flow.toml")
    load_task = replace(workflow.tasks["load"], priority=3)
    workflow.tasks["load"] = load_task
    extract = replace(workflow.tasks["extract"], priority=2)
    workflow.tasks["extract"] = extract
    saved = update_text(text, workflow, workflow.base_dir)
    assert 'on_failure = "page-me"  # this task\'s own' in saved
    assert "[workflow.notify]" in saved and 'on_finish = "mail -s done me"' in saved
    assert loads(saved, "flow.toml").hooks == workflow.hooks


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "[workflow]\non_failure = 3",
            "workflow.on_failure",
            "must be a command string or an argv list, got an integer",
        ),
        ("[workflow]\non_failure = ''", "workflow.on_failure", "is empty"),
        (
            "[workflow]\non_retry = []",
            "workflow.on_retry",
            "must be a non-empty argv list of strings",
        ),
        (
            "[workflow]\non_sucess = 'x'",
            "workflow.on_sucess",
            "unknown key (did you mean 'on_success'?)",
        ),
        ("[workflow]\nhook_timeout = '0s'", "workflow.hook_timeout", "must be > 0, got '0s'"),
        ("[workflow]\nhook_timeout = 'soon'", "workflow.hook_timeout", "'soon'"),
        (
            "[workflow.notify]\ndesktop = 'yes'",
            "workflow.notify.desktop",
            "must be true or false, got a string",
        ),
        (
            "[workflow.notify]\nwebhook = 'ftp://x'",
            "workflow.notify.webhook",
            "must be an http:// or https:// URL, got 'ftp://x'",
        ),
        (
            "[workflow.notify]\nevents = ['failed']",
            "workflow.notify.events",
            "must be a list of 'failure', 'retry', 'success', 'finish', got ['failed']",
        ),
        (
            "[workflow.notify]\nwebook = 'http://x'",
            "workflow.notify.webook",
            "unknown key (did you mean 'webhook'?)",
        ),
        ("[workflow]\nnotify = 1", "workflow.notify", "must be a table, got an integer"),
    ],
)
def test_bad_workflow_hook_keys_are_problems(text, where, message):
    with pytest.raises(WorkflowError) as caught:
        loads(text + "\n[tasks.a]\ncommand = ['true']\n", "flow.toml")
    [problem] = caught.value.problems
    assert problem.task is None and problem.key == where
    assert message in problem.message


@pytest.mark.parametrize(
    ("line", "key", "message"),
    [
        ("on_failure = 1", "on_failure", "must be a command string or an argv list"),
        ("on_finish = 'x'", "on_finish", "is about the whole run: put it in [workflow]"),
        ("on_failur = 'x'", "on_failur", "unknown key (did you mean 'on_failure'?)"),
        ("on_retry = ['']", "on_retry", "the program (first item) is empty"),
    ],
)
def test_bad_task_hook_keys_are_problems_of_that_task(line, key, message):
    with pytest.raises(WorkflowError) as caught:
        loads(f"[tasks.a]\ncommand = ['true']\n{line}\n", "flow.toml")
    [problem] = caught.value.problems
    assert (problem.task, problem.key) == ("a", key)
    assert message in problem.message


def test_hook_problems_are_located_in_the_text():
    from taskloom.engine.workflow_text import locate

    text = textwrap.dedent(
        """\
        [workflow]
        name = "x"
        on_failure = 3

        [workflow.notify]
        desktop = true
          webhook = "ftp://x"

        [tasks.a]
        command = ["true"]
        on_retry = 1
        """
    )
    with pytest.raises(WorkflowError) as caught:
        loads(text, "flow.toml")
    places = {p.key: locate(text, p.task, p.key) for p in caught.value.problems}
    assert places == {
        "workflow.on_failure": (3, 1),
        "workflow.notify.webhook": (7, 3),
        "on_retry": (11, 1),
    }
    inline = "[workflow]\nnotify = { desktop = 1 }\n"
    assert locate(inline, None, "workflow.notify.desktop") == (2, 1)
