"""taskloom.display: a display is one whose socket accepts a connection."""

from __future__ import annotations

import socket

from taskloom.display import unreachable


def test_a_listening_x_socket_is_a_display_and_a_missing_one_is_not(tmp_path, monkeypatch):
    # DISPLAY=:N means /tmp/.X11-unix/XN; a TCP display host:N means port 6000 + N.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        if port >= 6000:
            assert unreachable({"DISPLAY": f"127.0.0.1:{port - 6000}"}) is None
    assert "no X server" in unreachable({"DISPLAY": ":9797"})
    assert unreachable({}) == "DISPLAY and WAYLAND_DISPLAY are unset"


def test_wayland_is_its_socket_in_the_runtime_dir(tmp_path):
    path = tmp_path / "wayland-7"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen()
        env = {"WAYLAND_DISPLAY": "wayland-7", "XDG_RUNTIME_DIR": str(tmp_path)}
        assert unreachable(env) is None
    path.unlink()
    why = unreachable({"WAYLAND_DISPLAY": "wayland-7", "XDG_RUNTIME_DIR": str(tmp_path)})
    assert "wayland-7" in why and "no compositor" in why


def test_a_plugin_that_cannot_load_names_what_it_lacks(tmp_path):
    from taskloom.display import x11_plugin_problem

    broken = tmp_path / "libqxcb.so"
    broken.write_bytes(b"not a library")
    problem = x11_plugin_problem(broken)
    assert problem is not None and "cannot load" in problem and "apt install" in problem
    assert x11_plugin_problem(tmp_path / "absent.so") is None  # no plugin: Qt judges
