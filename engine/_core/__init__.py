"""The scheduler's core: the facade and the parts it delegates to (see scheduler.py)."""
