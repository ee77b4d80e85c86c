"""Run again (Clear): says what will run, runs it within this run; Retry/Run now say why not."""

from __future__ import annotations

from taskloom.engine import TaskState

S = TaskState


def noop():
    return None


def fail():
    raise RuntimeError("boom")


def settled_chain(qtbot, make_window, scheduler):
    scheduler.add(noop, name="extract")
    scheduler.add(noop, name="transform", deps=["extract"])
    scheduler.add(noop, name="load", deps=["transform"])
    scheduler.start()
    window = make_window(scheduler)
    qtbot.waitUntil(
        lambda: all(i.state is S.SUCCEEDED for i in window.bridge.tasks.values()), timeout=3000
    )
    return window


def test_run_again_with_downstream_says_what_will_run_then_runs_it(
    qtbot, make_window, manual_scheduler
):
    window = settled_chain(qtbot, make_window, manual_scheduler)
    window.select_tasks(["transform"])
    assert window.act_clear.isEnabled() and window.act_clear_downstream.isEnabled()
    window.act_clear_downstream.trigger()
    box = window.clear_question.box
    assert box is not None and "Run 2 tasks again" in box.text()
    assert "transform" in box.informativeText() and "load" in box.informativeText()
    assert "extract" not in box.informativeText()
    assert manual_scheduler.attempts("transform")[-1].number == 1  # nothing yet
    box.button(box.StandardButton.Cancel).click()
    assert len(manual_scheduler.attempts("transform")) == 1  # cancelled: nothing ran
    window.act_clear_downstream.trigger()
    box = window.clear_question.box
    next(b for b in box.buttons() if b.text() == "Run again").click()
    qtbot.waitUntil(lambda: len(manual_scheduler.attempts("load")) == 2, timeout=3000)
    assert len(manual_scheduler.attempts("transform")) == 2
    assert len(manual_scheduler.attempts("extract")) == 1
    assert "Running again" in window.statusBar().currentMessage()


def test_run_again_is_disabled_for_a_waiting_task_and_says_why(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.schedule_after(noop, 3600, name="later")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    window.select_tasks(["later"])
    assert not window.act_clear.isEnabled()
    assert "scheduled" in window.act_clear.statusTip()
    assert window.act_run_now.isEnabled()
    assert not window.act_retry.isEnabled()
    assert "only a failed" in window.act_retry.statusTip()


def test_retry_of_a_task_skipped_by_a_failed_upstream_is_off_and_says_why(
    qtbot, make_window, manual_scheduler
):
    manual_scheduler.add(fail, name="fetch")
    manual_scheduler.add(noop, name="publish", deps=["fetch"])
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: window.bridge.tasks["publish"].state is S.SKIPPED, timeout=3000)
    window.select_tasks(["publish"])
    assert not window.act_retry.isEnabled()
    assert "upstream task failed" in window.act_retry.statusTip()


def test_run_now_while_paused_says_it_is_held(qtbot, make_window, manual_scheduler):
    manual_scheduler.schedule_after(noop, 3600, name="tick")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    window.controller.toggle_pause(["tick"])
    window.select_tasks(["tick"])
    window.act_run_now.trigger()
    assert "paused" in window.statusBar().currentMessage()
    assert manual_scheduler.task("tick").state is S.READY  # due, held
