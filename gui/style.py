"""State colours and glyphs: the Okabe-Ito colour-blind-safe palette, one glyph per state.

Colour is never the only cue: every state also has a glyph, so the graph, the
timeline and the status bar stay readable in grey scale and for colour-blind users.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette

from engine import TaskState

S = TaskState

# Okabe & Ito (2008): orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple.
STATE_COLOURS: dict[TaskState, str] = {
    S.PENDING: "#BBBBBB",
    S.SCHEDULED: "#56B4E9",
    S.READY: "#F0E442",
    S.RUNNING: "#0072B2",
    S.RETRY_WAIT: "#E69F00",
    S.SUCCEEDED: "#009E73",
    S.FAILED: "#D55E00",
    S.SKIPPED: "#CC79A7",
    S.CANCELLED: "#4D4D4D",
}

STATE_GLYPHS: dict[TaskState, str] = {
    S.PENDING: "○",
    S.SCHEDULED: "◷",
    S.READY: "◎",
    S.RUNNING: "▶",
    S.RETRY_WAIT: "↻",
    S.SUCCEEDED: "✓",
    S.FAILED: "✗",
    S.SKIPPED: "»",
    S.CANCELLED: "⊘",
}

STATE_LABELS: dict[TaskState, str] = {s: s.name.replace("_", " ").lower() for s in TaskState}

RECURRING_MARK = "⟳"

# Attempt outcomes reuse the state colours so bars and nodes agree.
OUTCOME_COLOURS = {
    "running": STATE_COLOURS[S.RUNNING],
    "succeeded": STATE_COLOURS[S.SUCCEEDED],
    "failed": STATE_COLOURS[S.FAILED],
    "cancelled": STATE_COLOURS[S.CANCELLED],
}

ENTRY_COLOURS = {
    "scheduled": STATE_COLOURS[S.SCHEDULED],
    "retry": STATE_COLOURS[S.RETRY_WAIT],
    "recurring": "#0072B2",
}


def state_colour(state: TaskState) -> QColor:
    return QColor(STATE_COLOURS[state])


def text_colour_on(fill: QColor) -> QColor:
    """Black or white, whichever reads better on ``fill`` (WCAG relative luminance)."""

    def channel(c: float) -> float:
        c /= 255.0
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    lum = 0.2126 * channel(fill.red()) + 0.7152 * channel(fill.green())
    lum += 0.0722 * channel(fill.blue())
    return QColor("#000000") if lum > 0.22 else QColor("#FFFFFF")


def is_dark(palette: QPalette | None = None) -> bool:
    palette = palette or QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Window).lightness() < 128
