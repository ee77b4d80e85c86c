"""How often the window's periodic work may run while a run is busy.

The window shares its process (the GIL) and the machine's cores with the engine it
shows: a forecast, or the Runs grid read and made again, takes from the run's own
pace whatever it costs. Each such job waits ``COST_FACTOR`` times what it last cost
before it runs again, and never less than its own interval: it takes at most about
a tenth of a core, however big the run grows.
"""

from __future__ import annotations

COST_FACTOR = 9


def paced_ms(interval_ms: int, cost_s: float) -> int:
    """The wait before a job runs again: its interval, or ``COST_FACTOR`` times what
    it last cost (seconds) when that is longer."""
    return max(interval_ms, int(COST_FACTOR * cost_s * 1000))
