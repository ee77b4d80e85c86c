"""The timeline: a Gantt of attempts (this run and earlier ones) and what runs next.

One lane per task (with more than MANY_LANES tasks, only those with a bar or an
upcoming entry to show), or per worker ("By worker": which thread, process or cluster
worker ran each attempt; on by default when tasks run on a Dask cluster).
Attempts are bars coloured by outcome: this run's from the
event stream, earlier runs' (and this run's older ones) from the run store, read
for the visible window only, at most every few seconds, and off the GUI thread
(the window's ``HistoryReader``): the timeline draws what it has and adds the
stored bars when the read answers. Upcoming heap
entries are markers by kind (scheduled, retry with its attempt number,
recurring); an entry past its due time is marked late.

The window follows now until the user pans it: drag, Shift+wheel or a
horizontal wheel, or the arrow keys. "Now" or Home follows now again;
Ctrl+wheel or +/- zooms from 10 seconds to 24 hours. Until the user zooms or
pans, the window fits what there is (this run's first attempt to just past the
last upcoming entry, 20 s to 10 min), so a workflow of 1-second tasks is readable.

Parts, one job each (pyqtgraph style): ``model`` (lanes and bars), ``canvas`` (paints
them), ``axis`` (tick labels), ``widget`` (the ``Timeline`` that holds them), ``_common``
(sizes and helpers).
"""

from ._common import (
    AXIS_HEIGHT,
    CRITICAL_COLOUR,
    DEFAULT_SPAN,
    EARLIER_RUN_ALPHA,
    FIT_HISTORY,
    FIT_PAD,
    FIT_SPANS,
    GHOST_COLOUR,
    GROUP_BARS,
    GROUP_LANE,
    LABEL_WIDTH,
    LANE_HEIGHT,
    LANE_SORT_MS,
    LATE_COLOUR,
    LOOK_AHEAD,
    MANY_LANES,
    MAX_TICK_MS,
    MIN_TICK_MS,
    NOW_AT,
    PAN_STEP,
    SORT_AT_ONCE_UP_TO,
    SPANS,
    TICK_GAP,
    short_duration,
)
from .axis import TimelineAxis, reach_text, run_starts_in
from .canvas import TimelineCanvas
from .model import TimelineModel
from .widget import Timeline

__all__ = [
    "LANE_HEIGHT",
    "LABEL_WIDTH",
    "AXIS_HEIGHT",
    "SPANS",
    "NOW_AT",
    "LOOK_AHEAD",
    "DEFAULT_SPAN",
    "FIT_SPANS",
    "FIT_HISTORY",
    "FIT_PAD",
    "PAN_STEP",
    "LATE_COLOUR",
    "EARLIER_RUN_ALPHA",
    "MANY_LANES",
    "GHOST_COLOUR",
    "CRITICAL_COLOUR",
    "SORT_AT_ONCE_UP_TO",
    "LANE_SORT_MS",
    "MIN_TICK_MS",
    "MAX_TICK_MS",
    "GROUP_LANE",
    "GROUP_BARS",
    "TICK_GAP",
    "short_duration",
    "TimelineModel",
    "TimelineCanvas",
    "TimelineAxis",
    "reach_text",
    "run_starts_in",
    "Timeline",
]
