"""Every public name of taskloom.engine says what it is: a docstring on each exported
class and function, and on each public method and property of the exported classes."""

from __future__ import annotations

import inspect

import taskloom.engine as engine


def test_every_public_name_has_a_docstring():
    missing = []
    for name in engine.__all__:
        obj = getattr(engine, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if not inspect.isclass(obj) or issubclass(obj, tuple):  # NamedTuple fields: commented
            continue
        for member, value in vars(obj).items():
            if member.startswith("_"):
                continue
            if isinstance(value, property) or callable(value):
                doc = (
                    value.__doc__ if not isinstance(value, staticmethod) else value.__func__.__doc__
                )
                if not (doc or "").strip():
                    missing.append(f"{name}.{member}")
    assert missing == []
