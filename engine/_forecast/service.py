"""The forecast in another process: ``serve`` answers requests on a pipe (what the
window's ``ForecastProcess`` starts, ``gui/forecaster.py``).

Not a ``concurrent.futures.ProcessPoolExecutor``: its worker and its resource
tracker are started with this process's environment, the owner mark
(``TASKLOOM_OWNER``) included, so reopening a store in the same process ends them
as leftovers of a dead owner (docs/design.md 11.4); a plain subprocess is started
with the environment it is given, without the mark.
"""

from __future__ import annotations

from .report import forecast


def serve(source=None, sink=None, niceness: int = 0) -> None:
    """Answer forecast requests on a pipe, one at a time, until it closes: what the
    window's forecast process runs (``gui/forecaster.py``), so the passes never take
    the GIL from the window or the engine's workers. A request is a pickled
    ``(plan, model, keyword arguments of forecast())``, an answer a pickled
    ``("ok", Forecast)`` or ``("error", text)``; each is prefixed with its length
    (8 bytes, big-endian). Only its parent writes to it: pickle is no risk here.

    ``niceness`` lowers the process's CPU priority first (Unix): the window's
    forecasts then take the cores only when the run it forecasts leaves them idle."""
    import os
    import pickle
    import struct
    import sys

    if niceness and hasattr(os, "nice"):
        try:
            os.nice(niceness)
        except OSError:  # not allowed here: forecast at the usual priority
            pass

    source = source or sys.stdin.buffer
    sink = sink or sys.stdout.buffer
    while True:
        head = source.read(8)
        if len(head) < 8:
            return  # the parent closed the pipe (or died): nothing more to answer
        body = source.read(struct.unpack("!Q", head)[0])
        try:
            plan, model, arguments = pickle.loads(body)
            answer: tuple = ("ok", forecast(plan, model, **arguments))
        except Exception as exc:  # told to the parent, which shows no forecast
            answer = ("error", f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(answer)
        sink.write(struct.pack("!Q", len(data)) + data)
        sink.flush()
