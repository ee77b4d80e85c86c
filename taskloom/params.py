"""A run's params: ``KEY=VALUE`` pairs that its commands see as ``TASKLOOM_PARAM_KEY``.

``taskloom run --param KEY=VALUE`` and the window's Start bar read them with
``parse``; ``runs.open_run`` records them with the run (store meta ``params``) and a
resumed run keeps its own.
"""

from __future__ import annotations

import re
import shlex

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> (KEY in upper case, VALUE); ``ValueError`` saying what is wrong."""
    key, equals, value = text.partition("=")
    if not equals or not _NAME.match(key):
        raise ValueError(
            f"must be KEY=VALUE with KEY letters, digits and _ (not first a digit), got {text!r}"
        )
    if "\0" in value:
        raise ValueError(f"{key}: a value must not contain a NUL character")
    return key.upper(), value


def parse_all(items) -> dict[str, str]:
    """Several ``KEY=VALUE``; ``ValueError`` for a bad one or a key given twice."""
    params: dict[str, str] = {}
    for item in items:
        key, value = parse(item)
        if key in params and params[key] != value:
            raise ValueError(f"{key} is given twice")
        params[key] = value
    return params


def parse_line(text: str) -> dict[str, str]:
    """What a person typed in one line: ``day=2026-12-01 "title=a b"``."""
    try:
        words = shlex.split(text)
    except ValueError as exc:  # an unclosed quote
        raise ValueError(str(exc)) from None
    return parse_all(words)
