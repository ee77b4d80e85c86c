"""Theme follows the palette; geometry persists in QSettings; run_window makes a screenshot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtGui import QColor, QGuiApplication, QImage, QPalette
from PySide6.QtWidgets import QApplication

from taskloom.app import run_window
from taskloom.gui.main_window import MainWindow


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
