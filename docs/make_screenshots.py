"""Regenerate the README pictures in docs/ (offscreen, from the project root).

    python docs/make_screenshots.py

Each picture comes from the real ``taskloom FILE --screenshot PNG --quit-after S
[--theme dark] [--select TASK]`` command, in a fresh user data dir so no earlier
run is resumed. Pictures are saved at the strongest PNG compression (each well
under 300 KB).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "resources" / "examples"

# (picture, workflow, seconds after start, theme, task to select): mid-run moments.
SHOTS = [
    # Nothing selected: the inspector shows the run summary.
    ("window-light.png", "etl.toml", 6.0, "light", None),
    ("window-dark.png", "etl.toml", 6.0, "dark", "load"),
    # flaky fails at ~0.2 s and ~0.9 s; at 1.4 s its second backoff (1 s) is on the timeline.
    ("window-retry.png", "flaky.toml", 1.4, "light", "flaky"),
]


def take(picture: str, workflow: str, seconds: float, theme: str, select: str | None) -> Path:
    out = DOCS / picture
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_DATA_HOME=tempfile.mkdtemp())
    env.pop("TASKLOOM_THEME", None)
    command = [sys.executable, "-m", "taskloom", str(EXAMPLES / workflow)]
    command += ["--screenshot", str(out), "--quit-after", str(seconds), "--theme", theme]
    if select:
        command += ["--select", select]
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=60)
    return out


def take_watching(picture: str, workflow: str, seconds: float, kill_owner_after=None) -> Path:
    """A window watching a headless ``taskloom run`` of ``workflow`` (started first,
    on its own store); with ``kill_owner_after``, the owner is killed that long
    after the window opened, so the picture shows the window offering to take over."""
    import signal
    import time

    out = DOCS / picture
    data = Path(tempfile.mkdtemp())
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_DATA_HOME=str(data))
    env.pop("TASKLOOM_THEME", None)
    db = data / "run.db"
    path = str(EXAMPLES / workflow)
    owner = subprocess.Popen(
        [sys.executable, "-m", "taskloom", "run", path, "--db", str(db)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(2.5)  # the headless run is under way
        command = [sys.executable, "-m", "taskloom", path, "--db", str(db)]
        command += ["--screenshot", str(out), "--quit-after", str(seconds), "--theme", "light"]
        window = subprocess.Popen(command, cwd=ROOT, env=env)
        if kill_owner_after is not None:
            time.sleep(kill_owner_after)
            owner.send_signal(signal.SIGKILL)
        window.wait(60)
    finally:
        if owner.poll() is None:
            owner.send_signal(signal.SIGINT)
        owner.wait(60)
    return out


START_PAGE = """
import sys
from pathlib import Path
from PySide6.QtWidgets import QApplication
app = QApplication(sys.argv[:1])
from taskloom.gui.start_page import StartPage, bundled_examples
folder = Path.home() / "pipelines"  # a throwaway HOME: the paths read as a person's
folder.mkdir()
recent = [folder / "nightly-backup.toml", folder / "reports.toml"]
page = StartPage(recent, bundled_examples(), last=recent[0])
page.show()
app.processEvents()
sys.exit(0 if page.grab().save(sys.argv[1]) else 1)
"""


def take_start_page(picture: str) -> Path:
    """The start page as a person who opened two examples before sees it."""
    out = DOCS / picture
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=tempfile.mkdtemp())
    env.pop("TASKLOOM_THEME", None)
    command = [sys.executable, "-c", START_PAGE, str(out)]
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=60)
    return out


def shrink(path: Path) -> None:
    """Re-save at the strongest PNG compression (Qt maps quality 0 to zlib level 9).

    No colour reduction: Qt's Indexed8 conversion uses a fixed colour cube, which
    turned the dark theme's grey background navy. Full colour is ~110 KB anyway.
    """
    from PySide6.QtGui import QImage

    QImage(str(path)).save(str(path), "PNG", 0)


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # QImage needs one
    for picture, workflow, seconds, theme, select in SHOTS:
        path = take(picture, workflow, seconds, theme, select)
        shrink(path)
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")
    # A window watching a headless run, and the same once its owner was killed.
    for picture, kill_after in (("window-watching.png", None), ("window-owner-gone.png", 3.0)):
        path = take_watching(picture, "etl.toml", 4.5, kill_after)
        shrink(path)
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")
    path = take_start_page("start-page.png")
    shrink(path)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
