"""Big workflows (issue 25): what the window does on every selection and batch does not
scan every task (real engine, real window offscreen)."""

from __future__ import annotations

from taskloom.engine import TaskState as S


def noop() -> None:
    pass


def fail() -> None:
    raise RuntimeError("no")


class CountingTasks(dict):
    """The bridge's task table, counting the walks over all of it."""

    walks = 0

    def __iter__(self):
        CountingTasks.walks += 1
        return super().__iter__()

    def values(self):
        CountingTasks.walks += 1
        return super().values()

    def items(self):
        CountingTasks.walks += 1
        return super().items()


def test_selecting_in_a_run_with_nothing_settled_walks_no_task_table(
    qtbot, make_window, manual_scheduler
):
    for i in range(300):
        manual_scheduler.schedule(noop, 3600.0, name=f"t{i}")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    qtbot.waitUntil(lambda: len(window.bridge.tasks) == 300)
    window.bridge.tasks = CountingTasks(window.bridge.tasks)
    window.bridge.state_counts()  # counted once per batch that changed a state
    CountingTasks.walks = 0
    window.select_tasks(["t7"])
    window._update_actions()
    assert window.selected == ["t7"]
    assert CountingTasks.walks == 0  # Run again and Retry failed answered from the counts
    assert not window.act_clear_all.isEnabled() and not window.act_retry_failed.isEnabled()


def test_run_again_and_retry_failed_follow_the_counts(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="done")
    manual_scheduler.add(fail, name="broken")
    manual_scheduler.schedule(noop, 3600.0, name="later")
    manual_scheduler.start()
    window = make_window(manual_scheduler)
    manual_scheduler.clock.advance(0)
    qtbot.waitUntil(lambda: window.bridge.tasks["broken"].state is S.FAILED)
    qtbot.waitUntil(lambda: window.bridge.tasks["done"].state is S.SUCCEEDED)
    window.select_tasks(["later"])
    window._update_actions()
    assert window.act_clear_all.isEnabled() and window.act_retry_failed.isEnabled()
