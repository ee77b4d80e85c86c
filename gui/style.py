"""State colours and glyphs: the Okabe-Ito colour-blind-safe palette, one glyph per state.

Colour is never the only cue: every state also has a glyph, so the graph, the
timeline and the status bar stay readable in grey scale and for colour-blind users.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette

from taskloom.engine import Outcome, TaskState

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
# Paused: U+2016, which the common fonts (DejaVu, Liberation, Segoe UI, Helvetica) all
# draw; U+23F8 (the media pause sign) was an empty box with the default fonts.
PAUSED_GLYPH = "‖"
OWNER_GONE_GLYPH = "?"


def owner_gone(info) -> bool:
    """A task of a watched run whose owner died before it had an outcome, and whose
    process does not run either (``engine.watched_run.state_after_owner``): shown as
    "owner gone", never as running."""
    if info.state is not S.READY or not info.error:
        return False  # the common case, without the import below
    from taskloom.engine.watched_run import OWNER_GONE

    return info.error.startswith(OWNER_GONE)


def state_words(info) -> tuple[str, str]:
    """(glyph, label) of a task's state as the window shows it."""
    if owner_gone(info):
        return OWNER_GONE_GLYPH, "owner gone"
    return STATE_GLYPHS[info.state], STATE_LABELS[info.state]


# Attempt outcomes reuse the state colours so bars and nodes agree. Keyed by
# Outcome, a StrEnum: a stored outcome's plain string finds its colour too.
OUTCOME_COLOURS: dict[str, str] = {  # by Outcome, a str
    Outcome.RUNNING: STATE_COLOURS[S.RUNNING],
    Outcome.SUCCEEDED: STATE_COLOURS[S.SUCCEEDED],
    Outcome.FAILED: STATE_COLOURS[S.FAILED],
    Outcome.CANCELLED: STATE_COLOURS[S.CANCELLED],
    Outcome.INTERRUPTED: "#999999",  # stopped by closing the window; runs again on resume
    Outcome.LOST: "#7B68AE",  # its owner died mid-attempt (a crash, a kill): runs again on resume
}

ENTRY_COLOURS = {
    "scheduled": STATE_COLOURS[S.SCHEDULED],
    "retry": STATE_COLOURS[S.RETRY_WAIT],
    "recurring": "#0072B2",
    "skipped": "#999999",  # an occurrence a calendar leaves out
}


# Dark theme only: #4D4D4D all but vanished on a near-black background.
DARK_FILLS = {S.CANCELLED: "#80868B"}
DARK_OUTLINES = {S.CANCELLED: "#C4C7CC"}


def state_colour(state: TaskState, dark: bool = False) -> QColor:
    """The fill of a node or pill in ``state`` (a lighter grey for cancelled on dark)."""
    return QColor(DARK_FILLS.get(state, STATE_COLOURS[state]) if dark else STATE_COLOURS[state])


def state_outline(state: TaskState, dark: bool = False) -> QColor:
    """The outline drawn around a ``state`` fill."""
    if dark and state in DARK_OUTLINES:
        return QColor(DARK_OUTLINES[state])
    return state_colour(state, dark).darker(140)


def outcome_colour(outcome: str, dark: bool = False) -> QColor:
    if dark and outcome == Outcome.CANCELLED:
        return state_colour(S.CANCELLED, dark)
    return QColor(OUTCOME_COLOURS.get(outcome, "#888888"))


def state_text_colour(state: TaskState, backgrounds) -> QColor:
    """The state's colour as text: same hue, >= 4.5:1 against every background given
    (a table's Base and AlternateBase). Fills stay as they are; only text changes."""
    backgrounds = [QColor(b) for b in backgrounds]
    dark = backgrounds[0].lightness() < 128
    colour = state_colour(state, dark)
    for _ in range(4):
        for background in backgrounds:
            colour = readable_on(colour, background)
        if all(contrast(colour, b) >= 4.5 for b in backgrounds):
            break
    return colour


def kind_label(kind: str) -> str:
    """An event kind as people read it: "retry wait", not "retry_wait"."""
    return kind.replace("_", " ")


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
            result = QColor.fromHsv(
                result.hsvHue(), max(0, result.hsvSaturation() - 20), 255, result.alpha()
            )
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


# -- forcing a theme (``taskloom --theme``, TASKLOOM_THEME) ---------------------------
THEMES = ("system", "light", "dark")

_DARK_PALETTE = {
    "Window": "#202124",
    "WindowText": "#E8EAED",
    "Base": "#17181A",
    "AlternateBase": "#26282B",
    "Text": "#E8EAED",
    "Button": "#2B2D31",
    "ButtonText": "#E8EAED",
    "BrightText": "#FFFFFF",
    "Highlight": "#3B82F6",
    "HighlightedText": "#FFFFFF",
    "ToolTipBase": "#2B2D31",
    "ToolTipText": "#E8EAED",
    "PlaceholderText": "#9AA0A6",
    "Link": "#8AB4F8",
    "LinkVisited": "#C58AF9",
    "Mid": "#3C4043",
    "Dark": "#111214",
    "Light": "#4A4D52",
    "Midlight": "#35373B",
    "Shadow": "#000000",
}
_LIGHT_PALETTE = {
    "Window": "#EFEFEF",
    "WindowText": "#000000",
    "Base": "#FFFFFF",
    "AlternateBase": "#F5F5F5",
    "Text": "#000000",
    "Button": "#EFEFEF",
    "ButtonText": "#000000",
    "BrightText": "#FFFFFF",
    "Highlight": "#308CC6",
    "HighlightedText": "#FFFFFF",
    "ToolTipBase": "#FFFFDC",
    "ToolTipText": "#000000",
    "PlaceholderText": "#7F7F7F",
    "Link": "#0000FF",
    "LinkVisited": "#FF00FF",
    "Mid": "#B8B8B8",
    "Dark": "#9F9F9F",
    "Light": "#FFFFFF",
    "Midlight": "#CACACA",
    "Shadow": "#767676",
}
_DISABLED_TEXT = {"dark": "#7F8489", "light": "#8C8C8C"}


def theme_palette(theme: str) -> QPalette:
    """A complete light or dark palette (the same on every platform and style)."""
    palette = QPalette()
    for role, colour in (_DARK_PALETTE if theme == "dark" else _LIGHT_PALETTE).items():
        palette.setColor(getattr(QPalette.ColorRole, role), QColor(colour))
    for role in ("WindowText", "Text", "ButtonText"):
        palette.setColor(
            QPalette.ColorGroup.Disabled,
            getattr(QPalette.ColorRole, role),
            QColor(_DISABLED_TEXT[theme]),
        )
    return palette


def apply_theme(app, theme: str | None) -> str:
    """Force ``theme`` ("light" or "dark") on ``app``; "system" (or None) leaves the
    desktop's choice. Call before building windows. Returns the theme applied."""
    from PySide6.QtCore import Qt

    theme = (theme or "system").strip().lower()
    if theme not in THEMES:
        raise ValueError(f"unknown theme {theme!r}: choose one of {', '.join(THEMES)}")
    if theme == "system":
        return theme
    scheme = Qt.ColorScheme.Dark if theme == "dark" else Qt.ColorScheme.Light
    if hasattr(app.styleHints(), "setColorScheme"):  # Qt >= 6.8: native widgets follow too
        app.styleHints().setColorScheme(scheme)
    app.setPalette(theme_palette(theme))
    return theme
