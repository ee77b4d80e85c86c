"""Whether a display can be reached, before Qt tries (its xcb plugin aborts the process).

An SSH session with a stale ``DISPLAY`` (X forwarding gone, an Xvfb that exited) looks
like a display to Qt, which then dies with SIGABRT and a message about plugins. A
connect to the display's socket, with a short timeout, tells first. It does not check
X authorisation: a socket that accepts is taken as a display.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import socket
from pathlib import Path

CONNECT_TIMEOUT_S = 1.0
_X_DISPLAY = re.compile(r"^(?P<host>[^:]*):(?P<number>\d+)(\.\d+)?$")


def unreachable(environ: dict[str, str] | None = None) -> str | None:
    """None if a display named by DISPLAY or WAYLAND_DISPLAY accepts a connection, else
    why not (names the variable and its value). Only for Linux."""
    env = os.environ if environ is None else environ
    reasons = []
    wayland = env.get("WAYLAND_DISPLAY")
    if wayland:
        runtime = env.get("XDG_RUNTIME_DIR", "")
        path = wayland if wayland.startswith("/") else os.path.join(runtime, wayland)
        if _connects(socket.AF_UNIX, path):
            return None
        reasons.append(f"WAYLAND_DISPLAY={wayland!r}: no compositor at {path}")
    x_display = env.get("DISPLAY")
    if x_display:
        reason = _x_unreachable(x_display)
        if reason is None:
            return None
        reasons.append(f"DISPLAY={x_display!r}: {reason}")
    if not reasons:
        return "DISPLAY and WAYLAND_DISPLAY are unset"
    return "; ".join(reasons)


def _x_unreachable(display: str) -> str | None:
    match = _X_DISPLAY.match(display)
    if match is None:
        return None  # a form we do not know (e.g. a launchd path): let Qt judge
    host, number = match["host"], int(match["number"])
    if host in ("", "unix"):
        path = f"/tmp/.X11-unix/X{number}"
        # Linux X servers also listen on the abstract socket of the same name.
        if _connects(socket.AF_UNIX, "\0" + path) or _connects(socket.AF_UNIX, path):
            return None
        return f"no X server listens on {path}"
    if _connects(socket.AF_INET, (host, 6000 + number)):
        return None
    return f"no X server answers on {host}:{6000 + number}"


def _connects(family: int, address) -> bool:
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.settimeout(CONNECT_TIMEOUT_S)
            probe.connect(address)
        return True
    except OSError:
        return False


def x11_plugin_problem(plugin: Path | None = None) -> str | None:
    """Why Qt's X11 platform plugin cannot load here (a system library it links to is
    missing), or None. Qt itself would abort with a message about xcb-cursor whatever
    the library is; loading the plugin first names the one that is missing."""
    if plugin is None:
        spec = importlib.util.find_spec("PySide6")
        if spec is None or not spec.submodule_search_locations:
            return None
        plugin = Path(spec.submodule_search_locations[0]) / "Qt/plugins/platforms/libqxcb.so"
    if not plugin.is_file():
        return None  # a build without it: let Qt judge
    try:
        ctypes.CDLL(str(plugin))
    except OSError as exc:
        found = re.search(r"([\w.+-]+\.so[\w.]*): cannot open", str(exc))
        missing = f"{found[1]} is missing" if found else str(exc)
        return (
            f"Qt's X11 plugin cannot load ({missing}); install the X11 libraries Qt needs "
            "(Debian/Ubuntu: apt install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 "
            "libxcb-shape0 libxkbcommon-x11-0)"
        )
    return None


def x11_only(environ: dict[str, str] | None = None) -> bool:
    """Qt will use X11: no Wayland compositor answers (Qt prefers Wayland when one does)."""
    env = os.environ if environ is None else environ
    wayland = env.get("WAYLAND_DISPLAY")
    if not wayland:
        return True
    runtime = env.get("XDG_RUNTIME_DIR", "")
    return not _connects(
        socket.AF_UNIX, wayland if wayland.startswith("/") else os.path.join(runtime, wayland)
    )
