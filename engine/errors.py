"""Exceptions the engine raises to its callers."""

from __future__ import annotations


class InvalidArgument(ValueError):
    """A scheduling call refused one of its arguments.

    ``field`` names the argument the refusal is about, by its keyword: "name",
    "deps", "timeout", "delay", "run_at", "interval", "mode", "overlap", "misfire",
    "misfire_grace", "trigger_rule", "cron", "tz", "workers". A form can show the
    message next to its widget for that field without reading the message.
    """

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field

    def __reduce__(self):
        return (type(self), (str(self), self.field))


class CycleError(InvalidArgument):
    """Adding a task or an edge would close a dependency cycle.

    ``path`` lists the task ids around the cycle, first id repeated at the end.
    Its ``field`` is "deps".
    """

    def __init__(self, path):
        self.path = tuple(path)
        super().__init__("dependency cycle: " + " -> ".join(self.path), "deps")

    def __reduce__(self):
        return (CycleError, (self.path,))


class TaskTimeout(Exception):
    """An attempt ran past its ``timeout``."""


class TaskCancelled(Exception):
    """Raised by cooperative task code that noticed its cancellation."""


class CommandLost(Exception):
    """A command's supervisor died before it recorded the command's end: the end is
    unknown, the group is ended, and the attempt is ``lost`` (it runs again, using no
    retry budget), as when a crash takes a command's supervisor with its owner."""


class StoreError(RuntimeError):
    """The store file cannot be used (newer schema, corrupt, not a store), or writing
    to it failed; the message is one line naming the file."""


class StoreBusy(StoreError):
    """Another live process owns the store (``owner`` says who, when known)."""

    def __init__(self, message: str, owner: object = None):
        super().__init__(message)
        self.owner = owner
