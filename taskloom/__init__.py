"""Taskloom: a task scheduler with a live monitor. ``taskloom --help`` for the command line."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"


def resources_dir() -> Path:
    """The bundled resources (icons, example workflows), wherever Taskloom is installed.

    ``taskloom/resources`` is a link to the repository's top-level ``resources/`` in a
    checkout and a real folder in an installed wheel (pyproject's package data).
    """
    from importlib.resources import files

    folder = Path(str(files(__name__) / "resources"))
    if not folder.is_dir():
        raise FileNotFoundError(f"taskloom's resources are missing: {folder} is not a folder")
    return folder


def example_path(name: str = "etl") -> Path:
    """The bundled example workflow ``name`` (etl, flaky, recurring)."""
    return resources_dir() / "examples" / f"{name}.toml"
