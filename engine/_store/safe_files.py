"""Files and folders beside a store that nobody else can plant or redirect.

A store may live in a folder other users can write to (a shared group folder, a
project checkout). There, a file Taskloom opens could be a symbolic link planted
to make it truncate or append to one of the victim's own files, a FIFO that
hangs the open, or a file another user owns and can rewrite. So every side file
(``<store>.lock``, ``<store>.watch``, ``<store>-inflight``, ``taskloom.log``) is
opened with ``open_private``: created with ``O_EXCL`` (mode 0600, whatever the
umask), or, if it exists, opened with ``O_NOFOLLOW`` and accepted only when it
is a regular file of this user that group and others cannot write. Folders
Taskloom makes are made 0700 (``private_folder``). A refusal is ``UnsafeFile``,
one line naming the path and why.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
LOCK_ROOT = Path("/tmp")  # user_lock_dir's parent: the same for every environment


class UnsafeFile(PermissionError):
    """A file or folder that is not this user's own, or that others can write (a
    ``PermissionError``: callers that handle those say it in one line)."""


def check_mine(path: str | os.PathLike, st: os.stat_result, what: str = "file") -> None:
    """``UnsafeFile`` unless ``st`` (of ``path``) is this user's and not writable by
    group or others."""
    uid = os.geteuid()
    if st.st_uid != uid:
        raise UnsafeFile(
            f"{path}: the {what} belongs to another user (uid {st.st_uid}, not {uid}); "
            "refusing to use it"
        )
    if st.st_mode & 0o022:
        raise UnsafeFile(
            f"{path}: the {what} is writable by other users (mode "
            f"{stat.S_IMODE(st.st_mode):04o}); refusing to use it (chmod go-w to allow)"
        )


def check_existing(path: str | os.PathLike, what: str = "file") -> bool:
    """If ``path`` exists: ``UnsafeFile`` unless it (and a symbolic link to it) is this
    user's and not writable by others. Whether it exists."""
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(link.st_mode):
        if link.st_uid != os.geteuid():
            raise UnsafeFile(f"{path}: a symbolic link of another user (uid {link.st_uid})")
        try:
            target = os.stat(path)
        except FileNotFoundError:
            raise UnsafeFile(f"{path}: a symbolic link to nothing") from None
        check_mine(path, target, what)
    else:
        check_mine(path, link, what)
    return True


def open_private(path: str | os.PathLike, flags: int, mode: int = PRIVATE_FILE) -> int:
    """A descriptor of the regular file ``path``, never through a symbolic link.

    With ``os.O_CREAT`` in ``flags`` a missing file is created (``O_EXCL``) with
    ``mode`` exactly; an existing one must be this user's regular file that group
    and others cannot write (its read bits for them are dropped), else
    ``UnsafeFile``. ``os.O_TRUNC`` truncates only once the file passed."""
    create = bool(flags & os.O_CREAT)
    truncate = bool(flags & os.O_TRUNC)
    base = (flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC)) | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(10):  # created and deleted by somebody else meanwhile: again
        if create:
            try:
                fd = os.open(path, base | os.O_CREAT | os.O_EXCL, mode)
            except FileExistsError:
                pass
            else:
                try:
                    os.fchmod(fd, mode)  # the umask may have taken bits away; never adds
                except OSError:
                    os.close(fd)
                    raise
                return fd
        try:
            fd = os.open(path, base | os.O_NONBLOCK)  # a FIFO must not hang the open
        except FileNotFoundError:
            if create:
                continue
            raise
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeFile(f"{path}: a symbolic link; refusing to follow it") from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UnsafeFile(f"{path}: not a regular file; refusing to use it")
            check_mine(path, st)
            if st.st_mode & 0o077 & ~mode:
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~0o077 | (mode & 0o077))
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            if truncate:
                os.ftruncate(fd, 0)
        except BaseException:
            os.close(fd)
            raise
        return fd
    raise UnsafeFile(f"{path}: keeps appearing and disappearing; refusing to use it")


def private_folder(path: str | os.PathLike, what: str = "folder") -> Path:
    """The folder ``path``, made (with its missing parents) 0700. An existing one
    must be this user's and not writable by group or others (``UnsafeFile``); its
    read and search bits for them are dropped: what Taskloom keeps there is private."""
    path = Path(path)
    make_folders(path)
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeFile(f"{path}: not a folder")
    check_mine(path, st, what)
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
    return path


def make_folders(path: str | os.PathLike) -> None:
    """Make the folder ``path`` and its missing parents, each 0700; an existing one
    is left as it is (a store may live in a folder the person chose to share)."""
    path = Path(path)
    missing = [f for f in (path, *path.parents) if not os.path.lexists(f)]
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_FOLDER)
        except FileExistsError:
            continue
        os.chmod(folder, PRIVATE_FOLDER)


def same_file(fd: int, path: str | os.PathLike) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (not deleted, not replaced)."""
    try:
        here, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def lock_dir_path() -> Path:
    return LOCK_ROOT / f"taskloom-{os.geteuid()}"


def user_lock_dir() -> Path:
    """One folder per user for the locks that must hold whatever the environment
    (``XDG_*``, ``--db``) and whatever happens to a store's folder: the same for a
    session, cron and systemd. ``/tmp/taskloom-<uid>``, 0700, this user's own. If
    another user took that name first (a planted folder or link), every process of
    this user finds the same refusal and uses ``fallback_lock_dir()`` instead."""
    try:
        return own_folder(lock_dir_path())
    except UnsafeFile:
        return own_folder(fallback_lock_dir())


def fallback_lock_dir() -> Path:
    """``~/.cache/taskloom-locks`` of the user's account (its passwd entry, not
    ``$HOME``: the same under cron and systemd)."""
    if FALLBACK_ROOT is not None:
        return FALLBACK_ROOT / "taskloom-locks"
    import pwd

    try:
        home = Path(pwd.getpwuid(os.geteuid()).pw_dir)
    except KeyError:  # a uid without an account (a container): $HOME it is
        home = Path.home()
    return home / ".cache" / "taskloom-locks"


FALLBACK_ROOT: Path | None = None  # tests: instead of the account's home


def own_folder(path: Path) -> Path:
    make_folders(path)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeFile(f"{path}: not a folder; refusing to keep Taskloom's locks there")
    check_mine(path, st, "lock folder")
    if stat.S_IMODE(st.st_mode) != PRIVATE_FOLDER:
        os.chmod(path, PRIVATE_FOLDER)
    return path
