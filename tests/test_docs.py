"""The docs a newcomer reads stay true to the tree: every link and path they name
exists, the README stays short, and the module map lists every module."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def test_every_relative_link_in_the_docs_points_at_a_file_in_the_repository():
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if target.startswith(("http:", "https:", "mailto:")):
                continue
            path = (doc.parent / target).resolve()
            if not path.exists() or ROOT not in path.parents:
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_readme_is_a_short_way_in_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert text.count("<!-- run-command -->") == 1 and text.count("<!-- test-command -->") == 1


def test_every_module_is_in_the_architecture_pages_module_map():
    page = (ROOT / "docs" / "architecture.md").read_text()
    start = page.index("## Module map")
    module_map = page[start : page.index("\n## ", start + 1)]
    missing = [
        str(path.relative_to(ROOT))
        for package in ("engine", "gui", "taskloom")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "__init__.py" and f"`{path.relative_to(ROOT)}`" not in module_map
    ]
    assert not missing, missing
