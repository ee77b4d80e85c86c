"""Theme follows the palette; geometry persists in QSettings; run_window makes a screenshot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPalette
from PySide6.QtWidgets import QApplication

from taskloom.app import run_window
from taskloom.cli import _window_parser
from taskloom.engine import TaskState
from taskloom.gui.main_window import MainWindow
from taskloom.gui.style import (
    STATE_COLOURS,
    apply_theme,
    contrast,
    is_dark,
    state_colour,
    state_outline,
    state_text_colour,
    theme_palette,
)

ROOT = Path(__file__).resolve().parents[2]
S = TaskState


def noop():
    return None


def test_dark_palette_recolours_the_graph(qtbot, make_window, manual_scheduler):
    manual_scheduler.add(noop, name="a")
    window = make_window(manual_scheduler)
    assert window.scene.backgroundBrush().color().lightness() > 128  # offscreen default is light
    original = QGuiApplication.palette()
    dark = QPalette(original)
    dark.setColor(QPalette.ColorRole.Base, QColor("#17181A"))
    dark.setColor(QPalette.ColorRole.Window, QColor("#202124"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#E8EAED"))
    try:
        QApplication.setPalette(dark)
        qtbot.waitUntil(
            lambda: window.scene.backgroundBrush().color().lightness() < 64, timeout=2000
        )
        edge = window.scene.edges_item.pen().color()
        assert edge.lightness() > 128  # edges stay visible on the dark background
    finally:
        QApplication.setPalette(original)
    qtbot.waitUntil(lambda: window.scene.backgroundBrush().color().lightness() > 128, timeout=2000)


def test_geometry_is_saved_and_restored(qtbot, settings, manual_scheduler):
    first = MainWindow(manual_scheduler, settings=settings)
    qtbot.addWidget(first)
    first.show()
    first.resize(720, 590)  # inside the offscreen 800x600 screen
    qtbot.waitUntil(lambda: first.size().width() == 720)
    first.close()
    assert settings.value("window/geometry") is not None
    second = MainWindow(manual_scheduler, settings=settings)
    qtbot.addWidget(second)
    second.show()
    assert (second.width(), second.height()) == (720, 590)
    second.close()


def write_workflow(tmp_path, body: str):
    path = tmp_path / "flow.toml"
    path.write_text(
        '[workflow]\nname = "demo"\nworkers = 2\n\n' + body.replace("PY", sys.executable),
        encoding="utf-8",
    )
    return path


def test_run_window_saves_a_screenshot_and_exits_0(qtbot, tmp_path):
    path = write_workflow(
        tmp_path,
        '[tasks.first]\ncommand = ["PY", "-c", "print(1)"]\n\n'
        '[tasks.second]\ncommand = ["PY", "-c", "import sys; sys.exit(3)"]\ndeps = ["first"]\n',
    )
    picture = tmp_path / "shot.png"
    assert run_window(str(path), screenshot=str(picture), quit_after=1.0) == 0
    image = QImage(str(picture))
    assert (image.width(), image.height()) == (1400, 900)
    assert not [w for w in QApplication.topLevelWidgets() if w.isVisible()]


def test_run_window_refuses_a_bad_file(qtbot, tmp_path, capsys):
    path = write_workflow(tmp_path, '[tasks.x]\ncommand = ["PY"]\ndeps = ["missing"]\n')
    assert run_window(str(path), screenshot=str(tmp_path / "no.png"), quit_after=0.5) == 2
    assert "missing" in capsys.readouterr().err
    assert not (tmp_path / "no.png").exists()


@pytest.mark.slow
def test_taskloom_command_takes_a_screenshot_headless(tmp_path):
    path = write_workflow(tmp_path, '[tasks.only]\ncommand = ["PY", "-c", "print(1)"]\n')
    picture = tmp_path / "cli.png"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "taskloom",
            str(path),
            "--screenshot",
            str(picture),
            "--quit-after",
            "1",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    image = QImage(str(picture))
    assert (image.width(), image.height()) == (1400, 900)


# Forced themes, and state colours that read in both (from the screenshot review).
def test_apply_theme_forces_dark_and_light(qapp):
    original = QGuiApplication.palette()
    try:
        assert apply_theme(qapp, "dark") == "dark"
        assert is_dark(QGuiApplication.palette())
        assert apply_theme(qapp, "light") == "light"
        assert not is_dark(QGuiApplication.palette())
        with pytest.raises(ValueError):
            apply_theme(qapp, "purple")
    finally:
        QApplication.setPalette(original)


def test_window_parser_takes_theme_and_select():
    args = _window_parser().parse_args(["--theme", "dark", "--select", "flaky"])
    assert (args.theme, args.select) == ("dark", "flaky")
    assert _window_parser().parse_args([]).theme is None
    with pytest.raises(SystemExit):
        _window_parser().parse_args(["--theme", "sepia"])


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_screenshot_in_the_dark_theme_with_a_task_selected(tmp_path):
    out = tmp_path / "dark.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_DATA_HOME=str(tmp_path))
    env["TASKLOOM_THEME"] = "dark"  # the environment variable alone picks the theme
    command = [sys.executable, "-m", "taskloom", str(ROOT / "resources/examples/flaky.toml")]
    command += ["--screenshot", str(out), "--quit-after", "1", "--select", "reset"]
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=80)
    image = QImage(str(out))
    assert image.width() >= 960
    corner = image.pixelColor(image.width() // 3, image.height() // 4)  # the graph's background
    assert corner.lightness() < 60, corner.name()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_state_text_reads_on_the_log_in_both_themes(theme):
    palette = theme_palette(theme)
    rows = [palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.AlternateBase)]
    for state in TaskState:
        colour = state_text_colour(state, rows)
        for background in rows:
            assert contrast(colour, background) >= 4.5, (state, colour.name())
    assert contrast(QColor("#F0E442").darker(115), QColor("white")) < 2  # what ready was


def test_cancelled_is_visible_on_the_dark_background():
    base = QColor("#17181A")
    assert contrast(QColor(STATE_COLOURS[S.CANCELLED]), base) < 2.5  # what it was
    assert contrast(state_colour(S.CANCELLED, dark=True), base) >= 3
    assert contrast(state_outline(S.CANCELLED, dark=True), base) >= 7
    assert state_colour(S.CANCELLED).name() == STATE_COLOURS[S.CANCELLED].lower()  # light as is
