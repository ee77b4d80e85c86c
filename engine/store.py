"""A SQLite store: every task definition, state change and attempt, on disk.

Writes are queued by the engine (no I/O under its lock) and committed by one
writer thread in batches (group commit): whatever queued while the last commit
ran goes into the next transaction. ``flush()`` waits until everything queued so
far is committed; the engine calls it before it reports a run SUCCEEDED.

The file is created readable by its owner only, in WAL mode. ``synchronous``
defaults to NORMAL: a commit survives the process being killed; after a power
loss the last commits may be lost (pass ``durability="full"`` to fsync each
batch). A file written by a newer schema, or one that is not a Taskloom store,
is refused with ``StoreError`` and left untouched.

This module is the public face; the parts live in ``engine/_store/``, one job
each: ``schema.py`` (tables, migrations, checks), ``opening.py`` (the file and
its errors), ``reads.py`` (queries; ``StoreReader``), ``writer.py`` (queue and
group commit), ``retention.py`` (what a store forgets), ``ownership.py``
(heartbeat, take-over) and ``sqlite_store.py`` (``SQLiteStore`` put together).
"""

from __future__ import annotations

from ._store.lock import WorkflowLock as WorkflowLock  # for runs.open_run
from ._store.lock import workflow_owner as workflow_owner  # for steering a run
from ._store.opening import damaged as damaged
from ._store.reads import StoreReader as StoreReader
from ._store.reads import StoreReads as StoreReads
from ._store.records import ATTEMPT_COLUMNS as ATTEMPT_COLUMNS
from ._store.records import ATTEMPT_WRITE as ATTEMPT_WRITE
from ._store.records import TASK_COLUMNS as TASK_COLUMNS
from ._store.safe_files import UnsafeFile as UnsafeFile
from ._store.safe_files import open_private as open_private
from ._store.safe_files import private_folder as private_folder  # for log folders
from ._store.schema import MIGRATIONS as MIGRATIONS
from ._store.schema import SCHEMA_VERSION as SCHEMA_VERSION
from ._store.sqlite_store import SQLiteStore as SQLiteStore
from ._store.writer import BUSY_PATIENCE as BUSY_PATIENCE
from ._store.writer import BUSY_TIMEOUT as BUSY_TIMEOUT
from ._store.writer import LAZY_DELAY as LAZY_DELAY
from ._store.writer import MAX_BATCH as MAX_BATCH
from .errors import StoreBusy as StoreBusy
from .errors import StoreError as StoreError

__all__ = [
    "ATTEMPT_COLUMNS",
    "ATTEMPT_WRITE",
    "TASK_COLUMNS",
    "BUSY_PATIENCE",
    "BUSY_TIMEOUT",
    "LAZY_DELAY",
    "MAX_BATCH",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SQLiteStore",
    "StoreBusy",
    "StoreError",
    "StoreReader",
    "StoreReads",
    "UnsafeFile",
    "WorkflowLock",
    "damaged",
    "open_private",
    "private_folder",
    "workflow_owner",
]
