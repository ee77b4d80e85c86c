"""The sdist and the wheel built from it, as an index would get them: metadata
(SPDX licence, classifiers, one version), the LICENSE, and the README's pictures."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import taskloom
import taskloom.engine

pytestmark = pytest.mark.slow  # builds a wheel or an sdist (a minute)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dist(tmp_path_factory, source_tree) -> Path:
    """``python -m build``: the sdist, then the wheel built from that sdist."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "-q", "--outdir", str(out), str(source_tree)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def _metadata(dist: Path):
    (wheel,) = dist.glob("taskloom-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        text = archive.read(f"taskloom-{taskloom.__version__}.dist-info/METADATA").decode()
    return Parser().parsestr(text), names


def test_one_version_source():
    assert taskloom.engine.__version__ == taskloom.__version__
    project = ROOT.joinpath("pyproject.toml").read_text().split("[project]", 1)[1]
    assert not re.search(r"^version\s*=", project.split("\n[", 1)[0], re.M)
    assert 'version = { attr = "taskloom.__version__" }' in project


def test_the_wheel_says_licence_classifiers_and_version(dist):
    meta, names = _metadata(dist)
    assert meta["Version"] == taskloom.__version__
    assert meta["License-Expression"] == "MIT"
    assert meta["License-File"] == "LICENSE"
    assert f"taskloom-{taskloom.__version__}.dist-info/licenses/LICENSE" in names
    classifiers = meta.get_all("Classifier")
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Operating System :: POSIX" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639
    pyside = [r for r in meta.get_all("Requires-Dist") if r.startswith("PySide6")]
    assert sorted(pyside) == [
        'PySide6-Essentials<6.12,>=6.7; python_version < "3.12"',
        'PySide6-Essentials>=6.7; python_version >= "3.12"',
    ]
    assert "taskloom/resources/examples/etl.toml" in names


def test_the_sdist_has_the_licence_and_every_picture_the_readme_shows(dist):
    (sdist,) = dist.glob("taskloom-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    readme = ROOT.joinpath("README.md").read_text()
    pictures = set(re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", readme))
    assert pictures and all(not p.startswith(("http:", "https:", "/")) for p in pictures)
    assert pictures <= names, pictures - names
    assert {"LICENSE", "README.md", "docs/design.md", "resources/examples/etl.toml"} <= names
    licence = ROOT.joinpath("LICENSE").read_text()
    assert licence.startswith("MIT License") and "the Taskloom authors" in licence
