"""``taskloom install-desktop``: a launcher entry and icon for the person's desktop.

Writes, under the user's XDG data dir (``$XDG_DATA_HOME``, else ``~/.local/share``):

- ``applications/<id>.desktop``: runs this Python with ``-m taskloom`` (a menu does
  not have the virtual environment on its PATH), which opens the start page;
- ``icons/hicolor/scalable/apps/<id>.svg``: the app icon;
- ``metainfo/<id>.metainfo.xml``: the AppStream metadata (``resources/desktop``).

The id is the one the window gives Qt (``setDesktopFileName``), so the desktop
matches the running window to its entry. ``--uninstall`` removes the three files.
No root, no system folders; nothing outside the user's data dir is touched.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from taskloom import resources_dir

DESKTOP_ID = "io.github.taskloom.Taskloom"


def data_home() -> Path:
    """$XDG_DATA_HOME if it is an absolute path (the spec ignores others), else
    ~/.local/share."""
    value = os.environ.get("XDG_DATA_HOME", "")
    return Path(value) if value and os.path.isabs(value) else Path.home() / ".local" / "share"


RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")  # an Exec argument with one is quoted


def exec_quote(argument: str) -> str:
    """Quote one Exec argument as the Desktop Entry spec says: in double quotes,
    with ", `, $ and \\ escaped by a backslash; % is doubled. (The spec's quoting
    is not the shell's: single quotes mean nothing there.) Backslashes are then
    doubled again, as the key is a string value."""
    argument = argument.replace("%", "%%")
    if not RESERVED & set(argument):
        return argument
    for char in ("\\", '"', "`", "$"):
        argument = argument.replace(char, "\\" + char)
    return ('"' + argument + '"').replace("\\", "\\\\")


def desktop_entry(python: str = sys.executable) -> str:
    command = " ".join(exec_quote(part) for part in (python, "-m", "taskloom"))
    return "\n".join(
        [
            "[Desktop Entry]",
            "Type=Application",
            "Name=Taskloom",
            "GenericName=Task scheduler",
            "Comment=Run your pipelines' scripts on a schedule and watch them live",
            f"Exec={command} %f",
            f"Icon={DESKTOP_ID}",
            "Terminal=false",
            "Categories=Development;Utility;",
            "Keywords=scheduler;cron;workflow;pipeline;",
            "StartupNotify=true",
            "",
        ]
    )


def targets(base: Path) -> dict[str, Path]:
    return {
        "entry": base / "applications" / f"{DESKTOP_ID}.desktop",
        "icon": base / "icons" / "hicolor" / "scalable" / "apps" / f"{DESKTOP_ID}.svg",
        "metainfo": base / "metainfo" / f"{DESKTOP_ID}.metainfo.xml",
    }


def install(base: Path | None = None) -> list[Path]:
    """Write the three files (replacing older ones); returns their paths."""
    paths = targets(base or data_home())
    resources = resources_dir()
    contents = {
        "entry": desktop_entry().encode("utf-8"),
        "icon": (resources / "icons" / "app.svg").read_bytes(),
        "metainfo": (resources / "desktop" / f"{DESKTOP_ID}.metainfo.xml").read_bytes(),
    }
    for key, path in paths.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".part")  # never a half-written entry
        partial.write_bytes(contents[key])
        os.replace(partial, path)
    return list(paths.values())


def uninstall(base: Path | None = None) -> list[Path]:
    """Remove the files ``install`` wrote; returns those that were there."""
    removed = []
    for path in targets(base or data_home()).values():
        if path.exists():
            path.unlink()
            removed.append(path)
    return removed


def add_parser(sub, parents=()) -> None:
    parser = sub.add_parser(
        "install-desktop",
        parents=list(parents),
        help="add Taskloom to the desktop's applications menu (for this user)",
        description="Write a .desktop entry, the icon and AppStream metadata under "
        "$XDG_DATA_HOME (default ~/.local/share).",
    )
    parser.add_argument("--uninstall", action="store_true", help="remove them again")


def main(args) -> int:
    """0 when done, 2 when a file cannot be written or removed (the message says which)."""
    try:
        paths = uninstall() if args.uninstall else install()
    except OSError as exc:
        print(f"taskloom install-desktop: {exc}", file=sys.stderr)
        return 2
    verb = "removed" if args.uninstall else "wrote"
    for path in paths:
        print(f"{verb} {path}")
    if args.uninstall and not paths:
        print(f"nothing to remove under {data_home()}")
    return 0
