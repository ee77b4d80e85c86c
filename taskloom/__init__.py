"""Taskloom: a task scheduler with a live monitor. ``taskloom --help`` for the command line."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"


def resources_dir() -> Path:
    """The bundled ``resources/`` folder (icons, example workflows).

    A source checkout has it beside the packages; an installed copy carries it
    inside this package (``taskloom/resources``, see pyproject's package data).
    """
    package = Path(__file__).resolve().parent
    for candidate in (package.parent / "resources", package / "resources"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"taskloom resources not found near {package}")


def example_path(name: str = "etl") -> Path:
    """The bundled example workflow ``name`` (etl, flaky, recurring)."""
    return resources_dir() / "examples" / f"{name}.toml"
