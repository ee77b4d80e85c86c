"""Desktop notifications through the freedesktop service, spoken to directly on D-Bus.

``notify(summary, body)`` sends one ``org.freedesktop.Notifications.Notify`` call on
the session bus (``DBUS_SESSION_BUS_ADDRESS``) and returns the notification's id.
It needs neither ``notify-send`` nor Qt: a headless ``taskloom run`` must not load
a GUI toolkit to say that a task failed. The client is the least of the D-Bus wire
protocol that this one call needs (SASL EXTERNAL over a Unix socket, ``Hello``, one
method call, its reply), little-endian, in about 150 lines; a missing bus, a refused
login or an error reply is ``NotifyError`` with one line that says which.
"""

from __future__ import annotations

import os
import socket
import struct
import time

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
BUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
METHOD_CALL, METHOD_RETURN, ERROR, SIGNAL = 1, 2, 3, 4
# Header field codes (D-Bus specification, "Message format")
F_PATH, F_INTERFACE, F_MEMBER, F_ERROR_NAME, F_REPLY_SERIAL = 1, 2, 3, 4, 5
F_DESTINATION, F_SENDER, F_SIGNATURE = 6, 7, 8
URGENCY = {"low": 0, "normal": 1, "critical": 2}


class NotifyError(Exception):
    """No notification could be sent (no bus, no service, an error reply)."""


def session_bus_address() -> str | None:
    return os.environ.get("DBUS_SESSION_BUS_ADDRESS") or None


def notify(
    summary: str,
    body: str = "",
    *,
    urgency: str = "normal",
    app_name: str = "Taskloom",
    icon: str = "",
    expire_ms: int = -1,
    address: str | None = None,
    timeout: float = 5.0,
) -> int:
    """Show a notification; its id. ``NotifyError`` when it cannot be sent."""
    address = address or session_bus_address()
    if not address:
        raise NotifyError("no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
    hints = {"urgency": ("y", URGENCY.get(urgency, 1))}
    args: tuple = (app_name, 0, icon, summary, body, [], hints, expire_ms)
    with Connection(address, timeout) as bus:
        bus.call(*BUS, "Hello", "", ())
        reply = bus.call(SERVICE, PATH, SERVICE, "Notify", "susssasa{sv}i", args)
    return struct.unpack_from("<I", reply, 0)[0] if len(reply) >= 4 else 0


def notify_and_watch(
    summary: str,
    body: str,
    *,
    actions: tuple[str, ...] = (),
    on_action=None,
    stop=None,
    urgency: str = "normal",
    app_name: str = "Taskloom",
    icon: str = "",
    expire_ms: int = -1,
    address: str | None = None,
    timeout: float = 5.0,
    lifetime: float = 3600.0,
) -> None:
    """Show a notification with ``actions`` (key, label, key, label, ...) and stay on
    the bus until it is closed: ``on_action(key)`` when one is clicked. Returns once
    it closes, ``stop`` (a ``threading.Event``) is set or ``lifetime`` passes. For a
    thread of its own; ``NotifyError`` when it cannot be sent."""
    address = address or session_bus_address()
    if not address:
        raise NotifyError("no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
    hints = {"urgency": ("y", URGENCY.get(urgency, 1))}
    args = (app_name, 0, icon, summary, body, list(actions), hints, expire_ms)
    with Connection(address, timeout) as bus:
        bus.call(*BUS, "Hello", "", ())
        rule = f"type='signal',interface='{SERVICE}',path='{PATH}'"
        bus.call(*BUS, "AddMatch", "s", (rule,))
        reply = bus.call(SERVICE, PATH, SERVICE, "Notify", "susssasa{sv}i", args)
        (number,) = struct.unpack_from("<I", reply, 0)
        ends = time.monotonic() + lifetime
        while time.monotonic() < ends and not (stop is not None and stop.is_set()):
            message = bus.wait(1.0)
            if message is None:
                continue
            kind, _, header, data = message
            if kind != SIGNAL or len(data) < 4 or struct.unpack_from("<I", data, 0)[0] != number:
                continue
            if header.get(F_MEMBER) == "ActionInvoked" and on_action is not None:
                on_action(_first_string(data[4:]))
            elif header.get(F_MEMBER) == "NotificationClosed":
                return


class Connection:
    """One authenticated connection to a bus (also what a test's fake service uses)."""

    def __init__(self, address: str, timeout: float):
        self.deadline = time.monotonic() + timeout
        self.serial = 0
        self.buffer = b""
        self.sock = self._connect(address)
        try:
            self._authenticate()
        except BaseException:
            self.sock.close()
            raise

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()

    def _connect(self, address: str) -> socket.socket:
        problems = []
        for one in address.split(";"):
            kind, _, rest = one.partition(":")
            params = dict(p.split("=", 1) for p in rest.split(",") if "=" in p)
            if kind != "unix":
                problems.append(f"{kind}: not supported")
                continue
            if "path" in params:
                where: str | bytes = _unescape(params["path"])
            elif "abstract" in params:
                where = b"\0" + _unescape(params["abstract"]).encode()
            else:
                problems.append(f"{one}: no path")
                continue
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self._left())
            try:
                sock.connect(where)
                return sock
            except OSError as exc:
                sock.close()
                problems.append(f"{one}: {exc.strerror or exc}")
        raise NotifyError(f"cannot reach the session bus: {'; '.join(problems)}")

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise NotifyError("the session bus did not answer in time")
        return left

    def _authenticate(self) -> None:
        uid = str(os.getuid()).encode().hex()
        self._send(b"\0AUTH EXTERNAL " + uid.encode() + b"\r\n")
        line = self._read_line()
        if not line.startswith(b"OK"):
            raise NotifyError(f"the session bus refused us: {line.decode(errors='replace')}")
        self._send(b"BEGIN\r\n")

    def _send(self, data: bytes) -> None:
        self.sock.settimeout(self._left())
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise NotifyError(f"the session bus connection failed: {exc}") from None

    def _receive(self) -> None:
        """Append what the bus sends next to the buffer."""
        self.sock.settimeout(self._left())
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            raise NotifyError("the session bus did not answer in time") from None
        except OSError as exc:
            raise NotifyError(f"the session bus connection failed: {exc}") from None
        if not chunk:
            raise NotifyError("the session bus closed the connection")
        self.buffer += chunk

    def _read(self, count: int) -> bytes:
        while len(self.buffer) < count:
            self._receive()
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def _read_line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            self._receive()
        line, _, self.buffer = self.buffer.partition(b"\r\n")
        return line

    def call(self, dest, path, interface, member, signature: str, args: tuple) -> bytes:
        """Call a method; the reply's body. ``NotifyError`` for an error reply."""
        fields = [
            (F_PATH, "o", path),
            (F_INTERFACE, "s", interface),
            (F_MEMBER, "s", member),
            (F_DESTINATION, "s", dest),
        ]
        serial = self.send(METHOD_CALL, fields, signature, args)
        while True:  # signals (NameAcquired) and other replies may come first
            kind, _, header, reply_body = self.receive()
            if header.get(F_REPLY_SERIAL) != serial:
                continue
            if kind == ERROR:
                name = header.get(F_ERROR_NAME, "error")
                text = _first_string(reply_body) if header.get(F_SIGNATURE, "")[:1] == "s" else ""
                raise NotifyError(f"{member}: {name}" + (f": {text}" if text else ""))
            return reply_body

    def send(self, kind: int, fields: list, signature: str, args: tuple) -> int:
        """Send one message (header ``fields``: (code, type, value)); its serial."""
        self.serial += 1
        body = _Writer()
        if signature:
            body.values(signature, args)
            fields = [*fields, (F_SIGNATURE, "g", signature)]
        head = _Writer()
        head.raw(b"l" + bytes([kind, 0, 1]))
        head.u(len(body.data))
        head.u(self.serial)
        head.values("a(yv)", ([(code, (sig, value)) for code, sig, value in fields],))
        head.align(8)
        self._send(bytes(head.data) + bytes(body.data))
        return self.serial

    def wait(self, seconds: float) -> tuple[int, int, dict, bytes] | None:
        """The next message, or None when none came within ``seconds``."""
        if not self.buffer:
            self.sock.settimeout(seconds)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return None
            except OSError as exc:
                raise NotifyError(f"the session bus connection failed: {exc}") from None
            if not chunk:
                raise NotifyError("the session bus closed the connection")
            self.buffer += chunk
        self.deadline = time.monotonic() + 30  # the rest of a message comes at once
        return self.receive()

    def receive(self) -> tuple[int, int, dict, bytes]:
        """The next message: (type, serial, {header field code: value}, body)."""
        fixed = self._read(16)
        if fixed[:1] != b"l":
            raise NotifyError("the session bus answered big-endian, which this client lacks")
        kind = fixed[1]
        body_len, serial, fields_len = struct.unpack_from("<III", fixed, 4)
        padded = (fields_len + 7) & ~7
        fields = self._read(padded)[:fields_len]
        body = self._read(body_len)
        return kind, serial, _parse_fields(fields), body


def _unescape(text: str) -> str:
    from urllib.parse import unquote

    return unquote(text)


class _Writer:
    """D-Bus marshalling (little-endian) of the few types a notification needs."""

    def __init__(self):
        self.data = bytearray()

    def raw(self, data: bytes) -> None:
        self.data += data

    def align(self, n: int) -> None:
        self.data += b"\0" * (-len(self.data) % n)

    def u(self, value: int) -> None:
        self.align(4)
        self.data += struct.pack("<I", value)

    def values(self, signature: str, args) -> None:
        types = _split(signature)
        for sig, value in zip(types, args, strict=True):
            self.value(sig, value)

    def value(self, sig: str, value) -> None:
        code = sig[0]
        if code == "y":
            self.data.append(value)
        elif code in "ui":
            self.align(4)
            self.data += struct.pack("<I" if code == "u" else "<i", value)
        elif code in "so":
            encoded = value.encode()
            self.u(len(encoded))
            self.data += encoded + b"\0"
        elif code == "g":
            encoded = value.encode()
            self.data += bytes([len(encoded)]) + encoded + b"\0"
        elif code == "v":
            inner, item = value
            self.value("g", inner)
            self.value(inner, item)
        elif code == "(":
            self.align(8)
            for inner, item in zip(_split(sig[1:-1]), value, strict=True):
                self.value(inner, item)
        elif code == "a":
            element = sig[1:]
            self.align(4)
            at = len(self.data)
            self.data += b"\0\0\0\0"
            self.align(8 if element[0] in "({" else _alignment(element[0]))
            start = len(self.data)
            items = value.items() if element[0] == "{" else value
            for item in items:
                if element[0] == "{":
                    self.align(8)
                    key_sig, value_sig = _split(element[1:-1])
                    self.value(key_sig, item[0])
                    self.value(value_sig, item[1])
                else:
                    self.value(element, item)
            struct.pack_into("<I", self.data, at, len(self.data) - start)
        else:
            raise ValueError(f"type {sig!r} is not supported")


def _alignment(code: str) -> int:
    return {"y": 1, "g": 1, "v": 1, "u": 4, "i": 4, "s": 4, "o": 4, "a": 4}.get(code, 8)


def _split(signature: str) -> list[str]:
    """A signature as its complete types: "susa{sv}" -> ["s", "u", "s", "a{sv}"]."""
    types, i = [], 0
    while i < len(signature):
        j = i
        while signature[j] == "a":
            j += 1
        if signature[j] in "({":
            depth, k = 0, j
            while True:
                depth += signature[k] in "({"
                depth -= signature[k] in ")}"
                k += 1
                if depth == 0:
                    break
            j = k - 1
        types.append(signature[i : j + 1])
        i = j + 1
    return types


def _parse_fields(data: bytes) -> dict:
    """The header fields array a(yv): {code: value} for the basic types in it."""
    fields, i = {}, 0
    while i < len(data):
        i += -i % 8
        if i >= len(data):
            break
        code = data[i]
        sig_len = data[i + 1]
        sig = data[i + 2 : i + 2 + sig_len].decode()
        i += 3 + sig_len
        if sig in ("s", "o"):
            i += -i % 4
            (length,) = struct.unpack_from("<I", data, i)
            fields[code] = data[i + 4 : i + 4 + length].decode(errors="replace")
            i += 5 + length
        elif sig == "g":
            length = data[i]
            fields[code] = data[i + 1 : i + 1 + length].decode()
            i += 2 + length
        elif sig == "u":
            i += -i % 4
            fields[code] = struct.unpack_from("<I", data, i)[0]
            i += 4
        else:  # no other type is used in the fields this client reads
            break
    return fields


def _first_string(body: bytes) -> str:
    if len(body) < 4:
        return ""
    (length,) = struct.unpack_from("<I", body, 0)
    return body[4 : 4 + length].decode(errors="replace")
