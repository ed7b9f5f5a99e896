"""DESIGN's dependency direction, checked by reading every import (ast), so a violation fails in review."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "tools", "prompts")
PROJECT = ("bot", "tools", "prompts")
FORBIDDEN_MODULE_NAMES = {"utils", "helpers", "common", "misc", "manager"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module a file imports; `from a import b` yields both `a` and `a.b` (b may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path).rsplit(".", 0 if path.name == "__init__.py" else 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def source_files(*folders: str) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(files: Iterator[Path], forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in files
        for name in sorted(imports_of(path))
        if under(name, *forbidden) and not under(name, *allowed)
    ]


def test_the_checker_reads_imports() -> None:
    found = imports_of(ROOT / "bot" / "wiring" / "core.py")
    assert "bot.config" in found and "tools.base" in found


def test_config_imports_nothing_from_the_project() -> None:
    assert violations(iter([ROOT / "bot" / "config.py"]), PROJECT) == []


def test_only_wiring_and_cli_read_settings() -> None:
    readers = {*source_files("bot/wiring"), ROOT / "bot" / "cli.py", ROOT / "bot" / "config.py"}
    files = (p for p in source_files(*PACKAGES) if p not in readers)
    assert violations(files, ("bot.config",)) == []


def test_tools_never_import_bot() -> None:
    assert violations(source_files("tools"), ("bot",)) == []


def test_agent_knows_tools_only_through_the_interface_and_never_slack() -> None:
    files = list(source_files("bot/agent"))
    assert violations(iter(files), ("tools",), allowed=("tools.base",)) == []
    assert violations(iter(files), ("slack_bolt", "slack_sdk", "bot.slack")) == []


def test_slack_layer_never_imports_tools_or_the_llm_adapter() -> None:
    assert violations(source_files("bot/slack"), ("tools", "bot.agent.llm", "openai")) == []


def test_api_gets_slack_as_a_callable() -> None:
    files = iter([ROOT / "bot" / "api.py", ROOT / "bot" / "dispatch.py", ROOT / "bot" / "alerts.py"])
    assert violations(files, ("bot.slack", "slack_bolt", "slack_sdk")) == []


@pytest.mark.parametrize("folder", [*PACKAGES, "tests"])
def test_no_grab_bag_module_names(folder: str) -> None:
    names = FORBIDDEN_MODULE_NAMES
    bad = [p for p in source_files(folder) if p.stem in names or p.parent.name in names]
    assert bad == []
