"""The engine's side of the store: the journal of rows, and recovery after a restart."""
