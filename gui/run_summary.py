"""What the inspector shows with no task selected: the run at a glance.

Counts by state, the next entries due and the latest failures with their
errors; every task name is a link that selects it.
"""

from __future__ import annotations

import html
import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel

from taskloom.engine import TaskState

from .style import STATE_GLYPHS, STATE_LABELS, link_colours, state_text_colour

SHOWN = 5  # entries per section
ERROR_CHARS = 140  # an error is cut to this many characters (the inspector has all of it)


def describe_delay(seconds: float) -> str:
    """'in 4.2 s', 'in 3 min', 'due 2 s ago'."""
    late = seconds < 0
    seconds = abs(seconds)
    if seconds < 60:
        text = f"{seconds:.1f} s"
    elif seconds < 3600:
        text = f"{seconds / 60:.1f} min"
    elif seconds < 86400:
        text = f"{seconds / 3600:.1f} h"
    else:
        text = f"{seconds / 86400:.1f} d"
    return f"due {text} ago" if late else f"in {text}"


_UNITS = ((60.0, 1.0), (3600.0, 60.0), (86400.0, 3600.0), (math.inf, 86400.0))  # (below, unit)


def delay_changes_in(seconds: float) -> float:
    """How long until ``describe_delay`` says something else of a delay that is
    ``seconds`` now (a future one shrinks as time passes, a late one grows): at
    most a tenth of its unit, so a countdown in hours needs a new text every six
    minutes, not every second. A little past the change, never before it."""
    late, magnitude = seconds < 0, abs(seconds)
    index = next(i for i, (limit, _unit) in enumerate(_UNITS) if magnitude < limit)
    limit, unit = _UNITS[index]
    below = _UNITS[index - 1][0] if index else 0.0
    shown = round(magnitude / unit, 1)
    if late:  # grows: the next tenth up, or into the next unit
        left = min((shown + 0.05) * unit, limit) - magnitude
    else:  # shrinks: the tenth below, or under this unit into the one below
        left = magnitude - max((shown - 0.05) * unit, below)
    return max(left, 0.0) + 0.01


class RunSummary(QLabel):
    taskActivated = Signal(str)

    def __init__(self, bridge, parent=None):
        super().__init__(parent)
        self.setObjectName("runSummary")
        self.bridge = bridge
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.linkActivated.connect(self.taskActivated)
        # The link and state colours of the last palette seen (worked out per refresh,
        # they were a third of its cost: it runs with every batch of a busy run).
        self._colours_for: tuple[str, str, str] | None = None
        self._link = ""
        self._state_colours: dict[TaskState, str] = {}

    def refresh(self) -> None:
        text = self.summary_html()
        if text != self.text():  # an unchanged summary is not laid out again
            self.setText(text)

    def _colours(self) -> tuple[str, dict[TaskState, str]]:
        palette = self.palette()
        window = palette.color(QPalette.ColorRole.Window)
        key = (
            window.name(),
            palette.color(QPalette.ColorRole.Link).name(),
            palette.color(QPalette.ColorRole.LinkVisited).name(),
        )
        if key != self._colours_for:
            self._link = link_colours(palette)[0].name()
            self._state_colours = {s: state_text_colour(s, [window]).name() for s in TaskState}
            self._colours_for = key
        return self._link, self._state_colours

    def summary_html(self) -> str:
        tasks = self.bridge.tasks
        link, colours = self._colours()

        def name(tid: str) -> str:
            return f'<a href="{html.escape(tid)}" style="color:{link}">{html.escape(tid)}</a>'

        counts = self.bridge.state_counts()
        busy, recording = self.bridge.running_split()  # as the status bar says it
        counts[TaskState.RUNNING] = busy
        rows = []
        for state in TaskState:
            if counts[state]:
                colour = colours[state]
                rows.append(
                    f'<tr><td style="color:{colour}" align="right">{STATE_GLYPHS[state]}</td>'
                    f'<td align="right">&nbsp;{counts[state]}</td>'
                    f"<td>&nbsp;{STATE_LABELS[state]}</td></tr>"
                )
            if state is TaskState.RUNNING and recording:
                rows.append(
                    f'<tr><td></td><td align="right">&nbsp;{recording}</td>'
                    "<td>&nbsp;recording</td></tr>"
                )
        total = len(tasks)
        parts = [
            f"<h3>This run · {total} task{'s' if total != 1 else ''}</h3>",
            f"<table>{''.join(rows)}</table>" if rows else "<p>No tasks.</p>",
        ]
        now = self.bridge.clock_now()
        upcoming = sorted(self.bridge.upcoming, key=lambda e: e.run_at)[:SHOWN]
        if upcoming:
            items = "".join(
                f"<li>{name(e.task_id)} · {describe_delay(e.run_at - now)}"
                f"{' · ' + e.kind if e.kind != 'scheduled' else ''}</li>"
                for e in upcoming
            )
            parts.append(f"<h4>Next due</h4><ul>{items}</ul>")
        failed = [t for t in tasks.values() if t.error and t.state is not TaskState.SUCCEEDED]
        failed.sort(key=self._last_attempt_at, reverse=True)
        if failed:
            items = "".join(
                f"<li>{name(t.id)} ({STATE_LABELS[t.state]}, attempt {t.attempt}):<br>"
                f"<i>{html.escape(_cut(t.error))}</i></li>"
                for t in failed[:SHOWN]
            )
            parts.append(f"<h4>Latest failures</h4><ul>{items}</ul>")
        parts.append("<p>Select a task in the graph or the timeline for its attempts.</p>")
        return "".join(parts)

    def _last_attempt_at(self, info) -> float:
        attempts = self.bridge.attempts(info.id)
        if not attempts:
            return 0.0
        last = attempts[-1]
        return last.ended if last.ended is not None else last.started


def _cut(text: str) -> str:
    line = text.strip().splitlines()[-1] if text.strip() else ""
    return line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 1] + "…"
