"""What a store forgets: a run started afresh, tasks the workflow file defines
anew, and the runs and attempts past what retention keeps (section 5.2 of the
design doc). Each is one transaction on the owner's connection, after a flush,
serialized with the writer's commits."""

from __future__ import annotations

from collections.abc import Iterable

from .writer import StoreWriter


class Retention(StoreWriter):
    """The owner's deletions (``new_run``, ``forget_tasks``, ``prune_runs``,
    ``prune_attempts``)."""

    def new_run(self) -> None:
        """Start the workflow afresh: forget task states, keep every past attempt."""
        self.flush()
        with self._cond:
            self.run += 1
            run = self.run
        with self._read_lock:
            self._begin()
            self._conn.execute("DELETE FROM tasks")
            self._conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('run', ?)", (str(run),)
            )
            self._conn.execute("COMMIT")

    def prune_runs(self, keep_runs: int, keep_logs: int) -> list[str]:
        """Forget all but the last ``keep_runs`` runs (the current one included): their
        attempts and events are deleted. The attempts of runs before the last
        ``keep_logs`` lose their ``log_path``. Returns those log paths, for the
        caller to delete the files (the store does not touch files it did not write).
        Freed pages are reused, so a store pruned at every run stops growing."""
        for name, value in (("keep_runs", keep_runs), ("keep_logs", keep_logs)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self.flush()
        first_run = self.run - keep_runs + 1
        first_logged = self.run - min(keep_logs, keep_runs) + 1
        with self._read_lock:
            self._begin()
            try:
                paths = [
                    row[0]
                    for row in self._conn.execute(
                        "SELECT log_path FROM attempts WHERE run < ? AND log_path IS NOT NULL",
                        (first_logged,),
                    )
                ]
                self._conn.execute(
                    "UPDATE attempts SET log_path = NULL WHERE run < ? AND log_path IS NOT NULL",
                    (first_logged,),
                )
                self._conn.execute("DELETE FROM attempts WHERE run < ?", (first_run,))
                self._conn.execute("DELETE FROM events WHERE run < ?", (first_run,))
                self._conn.execute("DELETE FROM outputs WHERE run < ?", (first_run,))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return paths

    def prune_attempts(self, keep: int) -> list[str]:
        """Within the current run, keep each task's last ``keep`` attempts and the
        events of those attempts; older ones are deleted (a task every 10 ms would
        otherwise add about 300 bytes a run for as long as the run lasts). Safe while
        the engine runs: it is serialized with the writer's commits. Returns the log
        paths of the deleted attempts, for the caller to delete the files."""
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be an integer >= 1, got {keep!r}")
        run = self.run
        with self._read_lock:
            self._begin()
            try:
                limits = self._conn.execute(
                    "SELECT task_id, MAX(number) - ? FROM attempts WHERE run = ?"
                    " GROUP BY task_id HAVING MAX(number) - ? >= MIN(number)",
                    (keep, run, keep),
                ).fetchall()
                paths: list[str] = []
                for task_id, last_dropped in limits:
                    where = (run, task_id, last_dropped)
                    paths += [
                        row[0]
                        for row in self._conn.execute(
                            "SELECT log_path FROM attempts WHERE run = ? AND task_id = ?"
                            " AND number <= ? AND log_path IS NOT NULL",
                            where,
                        )
                    ]
                    self._conn.execute(
                        "DELETE FROM attempts WHERE run = ? AND task_id = ? AND number <= ?", where
                    )
                    self._conn.execute(
                        "DELETE FROM events WHERE run = ? AND task_id = ?"
                        " AND attempt > 0 AND attempt <= ?",
                        (run, task_id, last_dropped),
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return paths

    def forget_tasks(self, task_ids: Iterable[str], ended: float, error: str) -> None:
        """Drop tasks from the current run (their attempts stay): the workflow file
        defines them anew. An attempt of theirs still marked running is ``lost``."""
        self.flush()
        ids = [(task_id,) for task_id in task_ids]
        with self._read_lock:
            self._begin()
            try:
                self._conn.executemany(
                    "UPDATE attempts SET outcome = 'lost', ended = ?, error = ?"
                    " WHERE run = ? AND task_id = ? AND outcome = 'running'",
                    [(ended, error, self.run, task_id) for (task_id,) in ids],
                )
                self._conn.executemany("DELETE FROM tasks WHERE id = ?", ids)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
