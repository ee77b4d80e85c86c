"""Exceptions the engine raises to its callers."""

from __future__ import annotations


class CycleError(ValueError):
    """Adding a task or an edge would close a dependency cycle.

    ``path`` lists the task ids around the cycle, first id repeated at the end.
    """

    def __init__(self, path):
        self.path = tuple(path)
        super().__init__("dependency cycle: " + " -> ".join(self.path))


class TaskTimeout(Exception):
    """An attempt ran past its ``timeout``."""


class TaskCancelled(Exception):
    """Raised by cooperative task code that noticed its cancellation."""
