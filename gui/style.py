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
    "interrupted": "#999999",  # stopped by closing the window; the task runs again on resume
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


def contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""

    def luminance(c: QColor) -> float:
        def channel(v: float) -> float:
            v /= 255.0
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * channel(c.red()) + 0.7152 * channel(c.green()) + 0.0722 * channel(c.blue())

    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def readable_on(colour: QColor, background: QColor, minimum: float = 4.5) -> QColor:
    """``colour``, lightened or darkened (same hue) until it reads on ``background``."""
    result = QColor(colour)
    towards_light = background.lightness() < 128
    for _ in range(20):
        if contrast(result, background) >= minimum:
            break
        result = result.lighter(125) if towards_light else result.darker(125)
        if towards_light and result.value() == 255:  # lighter() stops at full value
            h, s, v, a = result.getHsv()
            result = QColor.fromHsv(h, max(0, s - 20), v, a)
    return result


def link_colours(palette: QPalette | None = None) -> tuple[QColor, QColor]:
    """The palette's Link and LinkVisited colours, made readable on its Base colour.

    A palette made dark by changing Window/Base/Text keeps Qt's default dark blue
    links, unreadable on a dark background; this keeps the hue and fixes the contrast.
    """
    palette = palette or QGuiApplication.palette()
    base = palette.color(QPalette.ColorRole.Window)
    link = palette.color(QPalette.ColorRole.Link)
    visited = palette.color(QPalette.ColorRole.LinkVisited)
    return readable_on(link, base), readable_on(visited, base)
