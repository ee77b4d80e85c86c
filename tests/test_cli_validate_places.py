"""``taskloom validate`` gives every problem its line and column, as text and in
``--json``: each file of the broken corpus (tests/broken/) marks with ``# problem``
the lines its problems must be placed on."""

from __future__ import annotations

import contextlib
import io
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "tests" / "broken").glob("*.toml"))


def taskloom(*args) -> SimpleNamespace:
    """``taskloom ARGS`` in this process (validate reads files, starts nothing; a
    process each would be most of this file's time): exit code, stdout, stderr.
    ``tests/test_cli_listing.py`` runs validate as a real process."""
    from taskloom.cli import main

    logger = logging.getLogger("taskloom")  # main() sets up its stderr handler
    saved = (logger.handlers[:], logger.level, logger.propagate)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(arg) for arg in args])
    finally:
        logger.handlers[:], logger.propagate = saved[0], saved[2]
        logger.setLevel(saved[1])
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def marked_lines(path: Path) -> set[int]:
    lines = path.read_text().splitlines()
    return {n for n, line in enumerate(lines, 1) if line.rstrip().endswith("# problem")}


def test_the_corpus_has_every_kind_of_problem():
    names = {path.stem for path in CORPUS}
    assert {"unknown_keys", "cycle", "bad_cron", "bad_durations", "syntax"} <= names


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_validate_json_places_each_problem_on_its_line(path):
    result = taskloom("validate", path, "--json")
    assert result.returncode == 2
    document = json.loads(result.stdout)
    assert document["version"] == 1
    problems = document["problems"]
    assert problems
    for problem in problems:
        assert isinstance(problem["line"], int) and isinstance(problem["column"], int), problem
        prefix = f"{path}:{problem['line']}:{problem['column']}: "
        assert problem["text"].startswith(prefix), problem
    assert {problem["line"] for problem in problems} == marked_lines(path)
    # each column points into the line: at the key, or where the syntax breaks
    lines = path.read_text().splitlines()
    for problem in problems:
        assert 1 <= problem["column"] <= len(lines[problem["line"] - 1]) + 1


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_validate_text_gives_the_same_places(path):
    result = taskloom("validate", path)
    assert result.returncode == 2
    document = json.loads(taskloom("validate", path, "--json").stdout)
    assert result.stdout.splitlines() == [problem["text"] for problem in document["problems"]]
