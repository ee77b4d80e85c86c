"""A bare ``taskloom``: the start page, then the workflow chosen there.

Workflows opened here wait for Start (``Sessions(start=False)``); each one opened,
here or later with File > Open, goes to the recent files and becomes the last
session, which the next start page offers to continue.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from taskloom.engine.store import StoreBusy
from taskloom.engine.workflow import WorkflowError

from .sessions import OPEN_ERRORS, Sessions, _show_busy

if TYPE_CHECKING:
    from taskloom.gui.start_page import StartPage

log = logging.getLogger(__name__)


class Launcher:
    """The start page and the sessions it opens."""

    def __init__(self, settings, *, db=None, fresh: bool = False, data_dir=None):
        from taskloom.gui.recent import RecentFiles

        self.settings = settings
        self.recent = RecentFiles(settings)
        self.sessions = Sessions(settings, db=db, fresh=fresh, data_dir=data_dir, start=False)
        self.sessions.opened.append(self._opened)
        self.page: StartPage | None = None

    def _opened(self, path) -> None:
        """Remember ``path``, and list the recent files in the window now showing."""
        self.recent.add(path)
        current = self.sessions.current
        if current is not None and hasattr(current.window, "set_recent"):
            current.window.set_recent(self.recent.files())

    def show_start_page(self):
        from taskloom.gui.start_page import StartPage, bundled_examples

        page = self.page = StartPage(self.recent.files(), bundled_examples(), self.recent.last())
        page.openRequested.connect(self.open)
        page.newRequested.connect(self.new)
        page.show()
        return page

    def open(self, path) -> bool:
        """Open ``path`` in the window (waiting for Start); the start page goes once
        a window shows. A file that is not there keeps the page, which says so; one
        with problems opens a window that lists them (fix the file, then Reload)."""
        if not Path(path).is_file():
            self.recent.remove(path)
            self._refuse(path, "there is no such file")
            return self._after(False)
        try:
            opened = self.sessions.open(path)
        except WorkflowError:
            opened = self.sessions.current is not None  # its problems are listed there
        except StoreBusy as exc:
            _show_busy(self.page, exc, str(path))
            opened = False
        except OPEN_ERRORS as exc:
            self._refuse(path, exc)
            opened = False
        return self._after(opened)

    def new(self) -> bool:
        return self._after(self.sessions.new())

    def _after(self, opened: bool) -> bool:
        if self.page is not None:
            if opened:
                self.page.close()
                self.page.deleteLater()
                self.page = None
            else:
                self.page.ready()
        return opened

    def _refuse(self, path, exc) -> None:
        from PySide6.QtWidgets import QMessageBox

        log.info("cannot open %s: %s", path, exc)
        if self.page is None:
            return
        box = QMessageBox(self.page)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Taskloom")
        box.setText(f"Cannot open {path}")
        box.setObjectName("openRefused")
        box.setInformativeText(str(exc))
        box.open()
        self.refusal = box

    def close(self) -> None:
        if self.page is not None:
            self.page.close()
            self.page.deleteLater()
            self.page = None
        self.sessions.close()
