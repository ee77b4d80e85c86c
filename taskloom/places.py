"""Where Taskloom keeps its files: one application folder name, ``taskloom``, in
the platform's places (platformdirs: XDG on Linux).

- ``<user data dir>/taskloom/runs/<name>-<key>.db``: a workflow's run store
  (``runs.default_db_path``), and ``runs/logs/<name>-<key>/`` its task logs;
- ``<user config dir>/taskloom/settings.toml``: retention settings (below);
- ``<user config dir>/taskloom/taskloom.conf``: the window's own settings (layout,
  recent files, preferences; ``gui/app_settings.py``), which Qt used to keep in
  ``~/.config/Taskloom/Taskloom.conf``: that file is copied over once.

Retention (``settings.toml``; the first two count the workflow's runs, the
current one included):

    keep_runs = 20        # runs whose attempts and events the store keeps
    keep_logs = 20        # runs whose task logs are kept (at most keep_runs)
    keep_attempts = 1000  # within a run, each task's last attempts kept (>= 50)
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

APP = "taskloom"
DEFAULT_KEEP = 20
DEFAULT_KEEP_ATTEMPTS = 1000
MIN_KEEP_ATTEMPTS = 50  # what the engine keeps in memory per task (and recovery reads)


def data_dir() -> Path:
    from platformdirs import user_data_path

    return user_data_path(APP)


def config_dir() -> Path:
    from platformdirs import user_config_path

    return user_config_path(APP)


def log_dir_for(db_path: Path) -> Path:
    """A workflow's task logs: ``logs/<store name>`` beside its run store."""
    db_path = Path(db_path).expanduser()
    return db_path.parent / "logs" / db_path.stem


def settings_file() -> Path:
    return config_dir() / "settings.toml"


@dataclass(frozen=True)
class Retention:
    """How much of a workflow's past is kept (see the module's docstring)."""

    runs: int = DEFAULT_KEEP
    logs: int = DEFAULT_KEEP
    attempts: int = DEFAULT_KEEP_ATTEMPTS

    def __post_init__(self):
        for name, least in (("runs", 1), ("logs", 1), ("attempts", MIN_KEEP_ATTEMPTS)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"keep_{name} must be an integer >= {least}, got {value!r}")
        if self.logs > self.runs:  # a log whose attempt is gone could never be cleaned
            object.__setattr__(self, "logs", self.runs)


def retention(path: Path | None = None) -> Retention:
    """The retention settings from ``settings.toml`` (defaults when it is missing);
    ``ValueError`` naming the file and the key when a value is wrong."""
    path = settings_file() if path is None else path
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Retention()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: cannot read: {exc}") from None
    known = ("keep_runs", "keep_logs", "keep_attempts")
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"{path}: unknown setting {unknown[0]!r} (known: {', '.join(known)})")
    try:
        return Retention(
            data.get("keep_runs", DEFAULT_KEEP),
            data.get("keep_logs", DEFAULT_KEEP),
            data.get("keep_attempts", DEFAULT_KEEP_ATTEMPTS),
        )
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
