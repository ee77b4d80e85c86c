"""A process that runs a small workflow with a store; tests SIGKILL it and start it again.

Usage: python -m tests.engine._crash_driver DB LOG
On a fresh store it schedules the workflow; on an existing one it only restores.
Exit 0 once every task has settled.
"""

from __future__ import annotations

import sys

from engine import Call, RetryPolicy, Scheduler
from engine.store import SQLiteStore

# (name, deps, seconds, fail_first)
WORKFLOW = [(f"t{i:02d}", [], 0.05 + 0.01 * (i % 7), i % 5 == 0) for i in range(10)]
WORKFLOW += [
    (f"u{i:02d}", [f"t{i:02d}", f"t{(i + 3) % 10:02d}"], 0.04, i % 4 == 1) for i in range(10)
]
WORKFLOW += [(f"v{i:02d}", [f"u{i:02d}", f"u{(i + 1) % 10:02d}"], 0.03, False) for i in range(10)]
WORKFLOW += [("final", [f"v{i:02d}" for i in range(10)], 0.02, False)]


def main(db: str, log: str) -> int:
    store = SQLiteStore(db)
    scheduler = Scheduler(workers=3, store=store)
    known = {task.id for task in scheduler.tasks()}
    for name, deps, seconds, fail_first in WORKFLOW:
        if name not in known:  # a kill may have come while the workflow was being added
            scheduler.add(
                Call(
                    "tests.engine._store_jobs:record",
                    {"name": name, "log": log, "seconds": seconds, "fail_first": fail_first},
                ),
                name=name,
                deps=deps,
                retry=RetryPolicy(max_attempts=3, base=0.05, jitter=0),
            )
    scheduler.start()
    scheduler.wait()
    scheduler.shutdown()
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
