"""Opening a store's file: its folder made, files another user could have planted
refused, and whatever SQLite said about it turned into one ``StoreError`` line
naming the path."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..errors import StoreError
from .safe_files import UnsafeFile, check_existing, make_folders, open_private

SIDE_SUFFIXES = ("-wal", "-shm", "-journal")  # SQLite's own files beside a store


def make_folder(path: Path) -> None:
    """The store's folder, or a ``StoreError`` saying why it cannot be had."""
    try:
        make_folders(path.parent)  # the missing ones 0700; an existing one is the person's
        if not path.parent.is_dir():
            raise NotADirectoryError(path.parent)
    except (FileExistsError, NotADirectoryError):
        blocker = next(p for p in [path.parent, *path.parent.parents] if p.exists())
        raise StoreError(f"{path}: cannot create the store: {blocker} is not a folder") from None
    except PermissionError as exc:
        where = exc.filename or path.parent
        raise StoreError(f"{path}: cannot create the store: {where} is not writable") from None
    except OSError as exc:  # /proc/nope, a read-only file system, no space, ...
        where = exc.filename or path.parent
        reason = exc.strerror or str(exc)
        raise StoreError(f"{path}: cannot create the store: {where}: {reason}") from None


def store_error(path: Path, exc: sqlite3.DatabaseError) -> StoreError:
    """One line for what SQLite said about a store."""
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{path}: the store is read-only; Taskloom needs to write to it")
    if "unable to open" in text:
        return StoreError(f"{path}: cannot open the store ({text})")
    if "disk I/O" in text or "full" in text:
        return StoreError(f"{path}: writing failed: {text}")
    return StoreError(f"{path}: the store is damaged ({text}); move it aside to start afresh")


def damaged(path: Path, what: str) -> StoreError:
    return StoreError(f"{path}: the store is damaged ({what}); move it aside to start afresh")


def create_private(path: Path) -> None:
    """The store's file, created readable by its owner only (``StoreError`` if a file
    there is not ours)."""
    try:
        os.close(open_private(path, os.O_RDONLY | os.O_CREAT))
    except UnsafeFile as exc:
        raise StoreError(str(exc)) from None


def check_owned(path: Path) -> None:
    """Refuse a store (or SQLite's files beside it) another user owns or can write:
    it could be made to run that user's commands as this one."""
    try:
        check_existing(path, "store")
        for suffix in SIDE_SUFFIXES:
            check_existing(path.with_name(path.name + suffix), "store's file")
    except UnsafeFile as exc:
        raise StoreError(str(exc)) from None


def identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path`` now, or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
