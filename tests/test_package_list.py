"""Every package folder of ours is in pyproject's explicit package list, so the wheel
carries it (engine/_forecast was left out once: the installed window could not start)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_for_the_wheel():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    folders = {
        "taskloom"
        + ("" if top == "taskloom" else "." + top)
        + "".join("." + part for part in init.parent.relative_to(ROOT / top).parts)
        for top in ("taskloom", "engine", "gui")
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts and "resources" not in init.parts
    }
    assert folders - listed == set()
    assert all(setuptools["package-dir"].get(name) for name in listed - {"taskloom"})
