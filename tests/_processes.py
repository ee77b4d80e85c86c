"""Process-table helpers shared by the tests that start real processes."""

from __future__ import annotations

import os


def group_exists(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still there."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
