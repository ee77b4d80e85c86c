"""What runs a task's code, and what cleans up after it: the attempt's context
(``RunContext``, exported as ``taskloom.engine.RunContext``), the owner mark and its
watcher (``reaper``), and ending what a dead owner left running (``survivors``)."""
