"""Secrets a workflow names (``secret_env = ["API_TOKEN"]``): read from Taskloom's
own environment when a run starts, never written anywhere, masked in output.

Only the names are in the workflow and its store; ``read_secrets(names)`` takes the
values from the environment (a resumed run reads them again) and ``MissingSecrets``
names those not set. ``mask(values)`` adds values to this process's list;
``masked()`` gives it (a command's start request carries it to the supervisor, which
writes ``***`` for each in the command's log and output tail: engine/_jobs/supervisor.py)
and ``redact(text)`` masks a text here. ``provide({name: value})`` masks them and
gives them to every command this process starts (``environment()``), as they were
when read: a later change to the process's environment does not reach them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping

MASK = "***"
_lock = threading.Lock()
_values: tuple[str, ...] = ()
_environment: dict[str, str] = {}


class MissingSecrets(KeyError):
    """``names``: the secret_env variables not set in Taskloom's environment."""

    def __init__(self, names: list[str]):
        self.names = names
        super().__init__(names)

    def __str__(self) -> str:
        listed = ", ".join(self.names)
        return f"secret_env {listed}: not set in Taskloom's environment"


def read_secrets(names: Iterable[str], environ: Mapping[str, str] | None = None) -> dict:
    """{name: value} for ``names`` from ``environ`` (default ``os.environ``)."""
    environ = os.environ if environ is None else environ
    names = list(dict.fromkeys(names))
    missing = [name for name in names if name not in environ]
    if missing:
        raise MissingSecrets(missing)
    return {name: environ[name] for name in names}


def mask(values: Iterable[str]) -> None:
    """Mask these values (empty ones mean nothing) in this process's commands' output."""
    global _values
    with _lock:
        # longest first: a value that contains another is masked whole
        found = set(_values) | {v for v in values if v}
        _values = tuple(sorted(found, key=lambda v: (-len(v), v)))


def provide(secrets: Mapping[str, str]) -> None:
    """Give ``secrets`` ({name: value}, as ``read_secrets`` read them) to every command
    this process starts, and mask their values."""
    global _environment
    with _lock:
        _environment = {**_environment, **secrets}
    mask(secrets.values())


def environment() -> dict[str, str]:
    """The secrets commands get ({name: value}), over the inherited environment."""
    return _environment


def masked() -> tuple[str, ...]:
    """The values being masked, longest first."""
    return _values


def redact(text: str, values: Iterable[str] | None = None) -> str:
    """``text`` with each masked value (or each of ``values``) as ``***``."""
    for value in masked() if values is None else values:
        if value:
            text = text.replace(value, MASK)
    return text


def forget() -> None:
    """Mask nothing and give commands no secrets any more (tests; a process that is done)."""
    global _values, _environment
    with _lock:
        _values, _environment = (), {}
