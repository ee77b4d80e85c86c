"""Outputs passed downstream: small results a task gives the tasks that depend on it.

A command writes them to the file ``TASKLOOM_OUTPUT`` names, as ``KEY=value`` lines
(blank lines and ``#`` comments are skipped) or as one JSON object; a ``call``
task returns them (a dict of them, or any other JSON value, kept as ``value``).
At most ``MAX_OUTPUT_BYTES``: more fails the attempt with the reason (a big result
belongs in a file whose path is the output). They are kept with the attempt that
succeeded (the store's ``outputs`` table) and each dependent's attempt gets those
of its dependencies: a command as ``TASKLOOM_INPUT_<TASK>_<KEY>`` variables and the
file ``TASKLOOM_INPUTS`` names (JSON: ``{task: {key: value}}``), a call as
``current_run().inputs``. A resumed run reads them back from the store.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

MAX_OUTPUT_BYTES = 4096
OUTPUT_ENV = "TASKLOOM_OUTPUT"
INPUTS_ENV = "TASKLOOM_INPUTS"
INPUT_PREFIX = "TASKLOOM_INPUT_"
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


class OutputError(ValueError):
    """Outputs that cannot be kept (too big, or not key=value lines or a JSON object)."""


def output_path(log_path: str) -> str:
    """Where an attempt's command writes its outputs: beside its log."""
    return (log_path[:-4] if log_path.endswith(".log") else log_path) + ".output"


def inputs_path(log_path: str) -> str:
    """Where an attempt's command reads its dependencies' outputs (JSON)."""
    return (log_path[:-4] if log_path.endswith(".log") else log_path) + ".inputs.json"


def parse_outputs(text: str, where: str = OUTPUT_ENV) -> dict[str, Any]:
    """``KEY=value`` lines or a JSON object; ``OutputError`` naming the line otherwise."""
    stripped = text.strip()
    if not stripped:
        return {}
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise OutputError(
                f"{where}:{exc.lineno}:{exc.colno}: not a JSON object: {exc.msg}"
            ) from None
        for key in data:
            if not _KEY.match(key):
                raise OutputError(f"{where}: output key {key!r} is not a name (A-Z, 0-9, _)")
        return data
    found: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _KEY.match(key):
            raise OutputError(f"{where}:{number}:1: expected KEY=value, got {line.strip()!r}")
        found[key] = value
    return found


def read_outputs(path: str) -> dict[str, Any] | None:
    """The outputs a command wrote to ``path`` (then removed), or None if it wrote none."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_OUTPUT_BYTES + 1)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    if len(data) > MAX_OUTPUT_BYTES:
        raise OutputError(
            f"{OUTPUT_ENV}: more than {MAX_OUTPUT_BYTES} bytes of outputs; write a big "
            "result to a file and output its path"
        )
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise OutputError(f"{OUTPUT_ENV}: outputs are not UTF-8 text") from None
    return parse_outputs(text)


def outputs_of_value(value: Any) -> dict[str, Any] | None:
    """A ``call`` task's return value as its outputs: a dict of names, or a plain JSON
    value (text, number, list) as ``{"value": ...}``; None or any other object gives
    none. ``OutputError`` if it does not encode as JSON or is bigger than
    ``MAX_OUTPUT_BYTES``."""
    if value is None or not isinstance(value, (dict, list, str, int, float)):
        return None  # an object of its own (a frame, a model) is no output: as before
    outputs = value if isinstance(value, dict) else {"value": value}
    for key in outputs:
        if not isinstance(key, str) or not _KEY.match(key):
            raise OutputError(f"return value: output key {key!r} is not a name (A-Z, 0-9, _)")
    encode(outputs)
    return outputs


def encode(outputs: dict[str, Any]) -> str:
    """The outputs as the store keeps them (JSON), checked against the size limit."""
    try:
        text = json.dumps(outputs, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise OutputError(f"outputs must be JSON values: {exc}") from None
    if len(text.encode()) > MAX_OUTPUT_BYTES:
        raise OutputError(
            f"outputs take {len(text.encode())} bytes, more than {MAX_OUTPUT_BYTES}; write a "
            "big result to a file and output its path"
        )
    return text


def _name(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", part).upper()


def input_variables(inputs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """``TASKLOOM_INPUT_<TASK>_<KEY>`` for each dependency's outputs (names upper-cased,
    other characters as ``_``; a value that is not a string as JSON)."""
    env = {}
    for task_id, outputs in inputs.items():
        for key, value in outputs.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            env[f"{INPUT_PREFIX}{_name(task_id)}_{_name(key)}"] = text
    return env
