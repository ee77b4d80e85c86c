"""A private D-Bus session bus and a tiny org.freedesktop.Notifications service on it,
for tests of desktop notifications. ``session_bus()`` skips the test, with the reason,
where no ``dbus-daemon`` can start."""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import threading
from contextlib import contextmanager

import pytest

from taskloom.dbus_notify import (
    BUS,
    F_DESTINATION,
    F_INTERFACE,
    F_MEMBER,
    F_PATH,
    F_REPLY_SERIAL,
    F_SENDER,
    METHOD_CALL,
    METHOD_RETURN,
    PATH,
    SERVICE,
    SIGNAL,
    Connection,
)


@contextmanager
def session_bus(tmp_path):
    """The address of a new session bus, ended afterwards."""
    program = shutil.which("dbus-daemon")
    if program is None:
        pytest.skip("no dbus-daemon (Debian package dbus-daemon; .ci/run installs it)")
    config = tmp_path / "session.conf"
    config.write_text(
        "<!DOCTYPE busconfig PUBLIC '-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN'"
        " 'http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd'>\n"
        "<busconfig><type>session</type>"
        f"<listen>unix:dir={tmp_path}</listen>"
        "<auth>EXTERNAL</auth>"
        "<policy context='default'><allow send_destination='*' eavesdrop='true'/>"
        "<allow eavesdrop='true'/><allow own='*'/></policy></busconfig>\n"
    )
    process = subprocess.Popen(
        [program, f"--config-file={config}", "--print-address", "--nofork"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    address = process.stdout.readline().strip()  # printed once it listens
    if not address:
        error = process.stderr.read().strip()
        process.wait()
        pytest.skip(f"dbus-daemon did not start: {error}")
    try:
        yield address
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(10)


class FakeNotifications:
    """Owns org.freedesktop.Notifications on ``address`` and records each Notify call
    as (app_name, summary, body, urgency); ``received`` is set on each. With ``click``,
    each notification is then clicked on that action and closed, as a person would."""

    def __init__(self, address: str, click: str | None = None):
        self.click = click
        self.bus = Connection(address, timeout=30)
        self.bus.call(*BUS, "Hello", "", ())
        self.bus.call(*BUS, "RequestName", "su", (SERVICE, 4))  # DO_NOT_QUEUE
        self.calls: list[tuple] = []
        self.received = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        next_id = 1
        try:
            while True:
                kind, serial, header, body = self.bus.receive()
                if kind != METHOD_CALL or header.get(F_MEMBER) != "Notify":
                    continue
                self.calls.append(_notify_args(body))
                fields = [(F_REPLY_SERIAL, "u", serial), (F_DESTINATION, "s", header[F_SENDER])]
                self.bus.send(METHOD_RETURN, fields, "u", (next_id,))
                if self.click is not None:
                    where = [(F_PATH, "o", PATH), (F_INTERFACE, "s", SERVICE)]
                    clicked = [*where, (F_MEMBER, "s", "ActionInvoked")]
                    self.bus.send(SIGNAL, clicked, "us", (next_id, self.click))
                    closed = [*where, (F_MEMBER, "s", "NotificationClosed")]
                    self.bus.send(SIGNAL, closed, "uu", (next_id, 2))
                next_id += 1
                self.received.set()
        except Exception:  # the bus went away at the end of the test
            return

    def close(self) -> None:
        try:
            self.bus.sock.shutdown(2)
        except OSError:
            pass
        self.bus.sock.close()


def _notify_args(body: bytes) -> tuple:
    """app_name, summary, body and the urgency hint of a Notify call's body."""
    at = 0

    def string() -> str:
        nonlocal at
        at += -at % 4
        (length,) = struct.unpack_from("<I", body, at)
        text = body[at + 4 : at + 4 + length].decode()
        at += 5 + length
        return text

    app = string()
    at += -at % 4
    at += 4  # replaces_id
    string()  # icon
    summary, text = string(), string()
    urgency = None
    marker = b"urgency"
    found = body.find(marker)
    if found >= 0:  # 'urgency' then a variant: signature 'y' and the byte
        urgency = body[found + len(marker) + 1 + 3]
    return app, summary, text, urgency


def env_with_bus(address: str) -> dict:
    env = dict(os.environ)
    env["DBUS_SESSION_BUS_ADDRESS"] = address
    return env
