"""A synchronous executor: runs each callable at once in the submitting thread."""

from __future__ import annotations

from concurrent.futures import Executor, Future


class SyncExecutor(Executor):
    """With a ``ManualClock`` it makes the engine fully deterministic."""

    def submit(self, fn, /, *args, **kwargs):
        """Run ``fn`` now, on the calling thread; returns a finished ``Future``."""
        future: Future = Future()
        future.set_running_or_notify_cancel()
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:  # the engine turns it into a FAILED attempt
            future.set_exception(exc)
        else:
            future.set_result(result)
        return future
