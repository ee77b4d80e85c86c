"""Counts its own attempts in a state file, to fail a set number of times.

usage: attempts.py reset           forget earlier attempts
       attempts.py succeed-on N    fail until the N-th attempt, then succeed

The state file lives in the temp dir, keyed by TASKLOOM_RUN_ID (set by
`taskloom run`) or else by the parent process (the scheduler), so runs side by
side do not share a count.
"""

import os
import sys
import tempfile
from pathlib import Path

run_id = os.environ.get("TASKLOOM_RUN_ID") or str(os.getppid())
state = Path(tempfile.gettempdir()) / f"taskloom-flaky-{run_id}.count"

if sys.argv[1] == "reset":
    state.unlink(missing_ok=True)
    print("attempt counter reset")
    sys.exit(0)

needed = int(sys.argv[2])
attempt = int(state.read_text()) + 1 if state.exists() else 1
state.write_text(str(attempt))
if attempt < needed:
    print(f"attempt {attempt}: working...")
    print(f"attempt {attempt} failed: service busy, try again", file=sys.stderr)
    sys.exit(1)
print(f"attempt {attempt}: succeeded")
state.unlink(missing_ok=True)
