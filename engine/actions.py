"""Callables named by reference ("package.module:function"), imported when run.

A reference survives a restart and can be sent to another process, unlike a
lambda. The string is checked when scheduled; the import happens at run time,
so an import failure is a FAILED attempt, not a scheduling error.
"""

from __future__ import annotations

import importlib
import re

_REF = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


class Call:
    """``Call("pkg.mod:func", kwargs)`` calls ``pkg.mod.func(**kwargs)`` when run."""

    __slots__ = ("ref", "kwargs")

    def __init__(self, ref: str, kwargs: dict | None = None):
        if not isinstance(ref, str) or not _REF.match(ref):
            raise ValueError(
                f"malformed callable reference {ref!r}: expected 'package.module:function'"
            )
        self.ref = ref
        self.kwargs = dict(kwargs or {})

    @property
    def __name__(self) -> str:  # used for generated task ids
        return self.ref.rpartition(":")[2].rpartition(".")[2]

    def resolve(self):
        """The function ``ref`` names, imported; ``ImportError`` naming it if it cannot be."""
        module_name, _, attr_path = self.ref.partition(":")
        try:
            target = importlib.import_module(module_name)
        except ImportError as exc:
            raise ImportError(f"{self.ref}: cannot import module {module_name!r}: {exc}") from exc
        for part in attr_path.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise ImportError(
                    f"{self.ref}: module {module_name!r} has no {attr_path!r}"
                ) from None
        if not callable(target):
            raise TypeError(f"{self.ref} is not callable")
        return target

    def __call__(self):
        return self.resolve()(**self.kwargs)

    def __eq__(self, other):
        return isinstance(other, Call) and (self.ref, self.kwargs) == (other.ref, other.kwargs)

    def __hash__(self):
        return hash(self.ref)

    def __repr__(self):
        return f"Call({self.ref!r}, {self.kwargs!r})" if self.kwargs else f"Call({self.ref!r})"

    def __reduce__(self):
        return (Call, (self.ref, self.kwargs))
