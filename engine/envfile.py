"""Env files (``env_file = ".env"`` in a workflow file): dotenv syntax, read strictly.

One ``KEY=value`` a line; blank lines and lines starting with ``#`` are skipped; an
``export`` before the key is allowed. A value is taken as written (spaces around it
dropped, `` #`` and what follows a comment), or quoted: ``'...'`` literally, ``"..."``
with ``\\n``, ``\\t``, ``\\"`` and ``\\\\`` escapes. Nothing is expanded (no ``$VAR``):
a file means what it says. ``read_env_file`` raises ``EnvFileError`` naming the first
bad line as ``file:line:column``.
"""

from __future__ import annotations

import re
from pathlib import Path

MAX_BYTES = 1024 * 1024
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}


class EnvFileError(ValueError):
    """A line an env file cannot hold; ``line`` and ``column`` are 1-based."""

    def __init__(self, file: str, line: int, column: int, message: str):
        self.file, self.line, self.column, self.message = file, line, column, message
        super().__init__(f"{file}:{line}:{column}: {message}")


def read_env_file(path) -> dict[str, str]:
    """The variables of the env file at ``path``; ``OSError`` if it cannot be read,
    ``EnvFileError`` for a bad line (or a file that is not UTF-8 text)."""
    path = Path(path)
    with open(path, "rb") as stream:
        data = stream.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise EnvFileError(str(path), 1, 1, f"more than {MAX_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise EnvFileError(str(path), line, 1, "not UTF-8 text") from None
    return parse_env(text, str(path))


def parse_env(text: str, file: str = "<env>") -> dict[str, str]:
    """The variables ``text`` (dotenv syntax, see the module doc) sets, in order."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        stripped = line.lstrip()
        column = len(line) - len(stripped) + 1
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("export ") or stripped.startswith("export\t"):
            rest = stripped[7:].lstrip()
            column += len(stripped) - len(rest)
            stripped = rest
        key_match = _KEY.match(stripped)
        if key_match is None:
            raise EnvFileError(file, number, column, "expected a variable name (KEY=value)")
        key = key_match.group()
        after = stripped[key_match.end() :]
        rest = after.lstrip(" \t")
        if not rest.startswith("="):
            where = column + key_match.end() + (len(after) - len(rest))
            raise EnvFileError(file, number, where, f"expected '=' after {key}")
        value_column = column + len(stripped) - len(rest) + 1
        found[key] = _value(rest[1:], file, number, value_column)
    return found


def _value(raw: str, file: str, line: int, column: int) -> str:
    text = raw.lstrip(" \t")
    column += len(raw) - len(text)
    if not text:
        return ""
    quote = text[0]
    if quote not in "'\"":
        value = re.split(r"\s#", text, maxsplit=1)[0].strip()
        if "\0" in value:
            raise EnvFileError(file, line, column, "a value must not contain a NUL character")
        return value
    out: list[str] = []
    n = 1
    while n < len(text):
        char = text[n]
        if char == quote:
            after = text[n + 1 :]
            tail = after.lstrip()
            if tail and not tail.startswith("#"):
                where = column + n + 1 + len(after) - len(tail)
                raise EnvFileError(file, line, where, "text after the closing quote")
            return "".join(out)
        if char == "\\" and quote == '"' and n + 1 < len(text):
            escaped = text[n + 1]
            if escaped not in _ESCAPES:
                raise EnvFileError(file, line, column + n, f"unknown escape \\{escaped}")
            out.append(_ESCAPES[escaped])
            n += 2
            continue
        if char == "\0":
            raise EnvFileError(file, line, column + n, "a value must not contain a NUL character")
        out.append(char)
        n += 1
    raise EnvFileError(file, line, column, f"no closing {quote} on this line")
