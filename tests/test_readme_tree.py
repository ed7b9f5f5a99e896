"""The README's tree of the code names every package there is, and no folder that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INDENT = 2  # spaces per level of the tree


def _tree_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```\n(bot/\n.*?)```", readme, re.S)
    assert len(blocks) == 1, "the README holds one tree of the code, starting at bot/"
    return str(blocks[0])


def _entries(tree: str) -> set[str]:
    """The folders the tree's lines begin with, as paths from the repository's root (by their indentation)."""
    stack: list[str] = []
    paths = set()
    for line in tree.splitlines():
        entry = re.match(r"^( *)([a-z_]+)/(\s|$)", line)
        if not entry:
            continue
        depth = len(entry.group(1)) // INDENT
        stack = [*stack[:depth], entry.group(2)]
        paths.add("/".join(stack))
    return paths


def _packages() -> set[str]:
    return {
        str(init.parent.relative_to(ROOT))
        for top in ("bot", "tools")
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


def test_every_package_is_in_the_readme_tree():
    tree = _tree_block()
    listed = _entries(tree)
    # a package is listed on a line of its own, or named in its parent's line ("series/ (shapes, …)")
    missing = {p for p in _packages() if p not in listed and f"{Path(p).name}/" not in tree}
    assert not missing, missing


def test_the_readme_tree_names_no_folder_that_is_gone():
    gone = {path for path in _entries(_tree_block()) if not (ROOT / path).is_dir()}
    assert not gone, gone
