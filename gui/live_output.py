"""The end of a log file that is still being written, in bounded memory.

``LogTail.poll()`` reads what was added since the last poll and keeps only the
last ``keep`` bytes; a file that grew by more than that is read from its last
``keep`` bytes (what came before is in the file: the inspector's Open log button).
"""

from __future__ import annotations

import os

KEEP_BYTES = 64 * 1024


class LogTail:
    def __init__(self, keep: int = KEEP_BYTES):
        self.keep = keep
        self.path: str | None = None
        self.offset = 0
        self.data = b""
        self.cut = False  # earlier output was dropped from memory

    def follow(self, path: str | None) -> None:
        """Follow ``path`` (from its end's last ``keep`` bytes); None stops."""
        if path != self.path:
            self.path, self.offset, self.data, self.cut = path, 0, b"", False

    def poll(self) -> bool:
        """Read what was added; True if the text changed."""
        if self.path is None:
            return False
        try:
            with open(self.path, "rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                if size < self.offset:  # replaced or truncated: start again
                    self.offset, self.data = 0, b""
                if size == self.offset:
                    return False
                start = max(self.offset, size - self.keep)
                if start > self.offset:
                    self.cut, self.data = True, b""
                stream.seek(start)
                chunk = stream.read(size - start)
        except OSError:
            return False
        self.offset = start + len(chunk)
        self.data = (self.data + chunk)[-self.keep :]
        if len(self.data) == self.keep:
            self.cut = True
        return True

    @property
    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        return ("…\n" + text) if self.cut else text
