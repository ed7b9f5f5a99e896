"""The dependency directions between the rooms of the tree, checked by reading every import (ast).

A violation fails in review.

Each rule names a room of the tree, what it must not import, and what it may import despite that. The rooms:
engine (the loop) < engine.text (its reader); playbook (model-free); routing (picks the path); safety (pure text
rules); slack and http (surfaces, given the agent as a callable); store; durable (a Redis consumer group, shared by
the surfaces' job streams); wiring and cli (the only Settings readers).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "tools", "prompts")
FORBIDDEN_MODULE_NAMES = {"utils", "helpers", "common", "misc", "manager"}
BOLT = ("slack_bolt", "slack_sdk")
# Pure functions over plain data in tools/ (no backend, no client): the playbook shares them with the tools that
# the model calls, so find_changes and the playbook rank suspects, read diffs and read time windows by one set of
# rules (tools.timerange may raise the interface's ToolError).
SHARED_RULES = ("tools.analysis.ranking", "tools.analysis.configdiff", "tools.timerange")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = ROOT) -> set[str]:
    """Every module a file imports; `from a import b` yields both `a` and `a.b` (b may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path, root).rsplit(".", 0 if path.name == "__init__.py" else 1)[0]
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


def source_files(*folders: str, root: Path = ROOT) -> Iterator[Path]:
    for folder in folders:
        target = root / folder
        yield from [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))


def under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@dataclass(frozen=True)
class Rule:
    """Files under `folders` (minus `exempt`) import nothing under `forbidden` unless it is under `allowed`."""

    name: str
    folders: tuple[str, ...]
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()

    def violations(self, root: Path = ROOT) -> list[str]:
        files: Iterable[Path] = source_files(*self.folders, root=root)
        return [
            f"{path.relative_to(root)} imports {name}"
            for path in files
            if not any(under(module_name(path, root), e) for e in self.exempt)
            for name in sorted(imports_of(path, root))
            if under(name, *self.forbidden) and not under(name, *self.allowed)
        ]


RULES = (
    Rule("config is a leaf", ("bot/config.py",), PACKAGES),
    Rule(
        "only wiring and cli read Settings", PACKAGES, ("bot.config",), exempt=("bot.wiring", "bot.cli", "bot.config")
    ),
    Rule("only cli builds through wiring", PACKAGES, ("bot.wiring", "bot.cli"), exempt=("bot.wiring", "bot.cli")),
    Rule("tools never import bot", ("tools",), ("bot",)),
    Rule(
        "engine knows tools through their interface", ("bot/engine", "bot/routing"), ("tools",), allowed=("tools.base",)
    ),
    Rule(
        "the playbook knows tools through their interface and the shared rules",
        ("bot/playbook",),
        ("tools",),
        allowed=("tools.base", *SHARED_RULES),
    ),
    *(
        Rule(
            f"the shared rules touch no backend: {m}",
            (f"{m.replace('.', '/')}.py",),
            ("tools", "bot"),
            allowed=("tools.base", *SHARED_RULES),
        )
        for m in SHARED_RULES
    ),
    Rule(
        "engine, playbook and routing never touch a surface or a store",
        ("bot/engine", "bot/playbook", "bot/routing"),
        (*BOLT, "bot.slack", "bot.http", "bot.store", "bot.http.telemetry"),
    ),
    Rule("the engine is the bottom layer", ("bot/engine",), ("bot.playbook", "bot.routing", "bot.safety")),
    Rule("the text reader is pure", ("bot/engine/text",), ("bot", "openai"), allowed=("bot.engine.text",)),
    Rule(
        "the playbook is model-free",
        ("bot/playbook",),
        ("openai", "bot.engine.llm", "bot.engine.loop", "bot.engine.protocol", "bot.routing"),
    ),
    Rule(
        "safety is plain text rules",
        ("bot/safety",),
        ("bot", "tools", "openai", *BOLT),
        allowed=("bot.safety", "bot.engine.types"),
    ),
    Rule(
        "slack gets the agent as a callable",
        ("bot/slack",),
        ("tools", "openai", "bot.engine.llm", "bot.engine.loop", "bot.playbook", "bot.routing", "bot.http"),
    ),
    Rule(
        "http gets slack as a callable",
        ("bot/http",),
        ("tools", "openai", *BOLT, "bot.slack", "bot.engine.llm", "bot.engine.loop", "bot.playbook", "bot.routing"),
        exempt=("bot.http.server",),
    ),
    Rule("the router needs no Bolt until Slack is mounted", ("bot/http/server.py",), ("bot.slack", "slack_sdk")),
    Rule(
        "the MCP server knows tools through their interface",
        ("bot/mcpserver",),
        ("tools", "openai", *BOLT, "bot.slack", "bot.http", "bot.engine", "bot.playbook", "bot.routing"),
        allowed=("tools.base",),
    ),
    Rule(
        "stores keep traces, nothing more",
        ("bot/store",),
        ("bot", "tools", "openai", *BOLT),
        allowed=("bot.store", "bot.engine.types", "bot.safety.redact"),
    ),
    Rule(
        "the Redis consumer group knows no job",
        ("bot/durable",),
        ("bot", "tools", "openai", *BOLT),
        allowed=("bot.durable",),
    ),
    # The two text boundaries, each passed once: text is cleaned (and a pasted secret redacted) where it enters,
    # and redacted where it leaves (bot.safety.outbound for Slack, the API and the terminal; the trace stores; the
    # log filter). The tool boundary gets its redactor from wiring. Nothing in between repeats either pass.
    Rule(
        "text is cleaned where it enters, once",
        PACKAGES,
        ("bot.safety.inbound.clean_inbound",),
        exempt=("bot.safety", "bot.slack.intake.events", "bot.http.api", "bot.http.alerts", "bot.cli.diagnosis"),
    ),
    Rule(
        "secrets are redacted at the boundaries only",
        PACKAGES,
        ("bot.safety.redact",),
        exempt=("bot.safety", "bot.store", "bot.wiring"),
    ),
)


def test_the_checker_reads_imports() -> None:
    found = imports_of(ROOT / "bot" / "wiring" / "core.py")
    assert "bot.config" in found and "tools.base" in found


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_dependency_direction(rule: Rule) -> None:
    assert rule.violations() == []


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_each_rule_fails_on_a_forbidden_import(rule: Rule, tmp_path: Path) -> None:
    """The test of the test: plant one forbidden import in a copy of the rule's room and see the rule fail."""
    folder = rule.folders[0]
    target = tmp_path / folder if folder.endswith(".py") else tmp_path / folder / "planted.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    forbidden = next(f for f in rule.forbidden if not any(under(f + ".x", a) for a in rule.allowed))
    exempt_name = module_name(target, tmp_path)
    assert not any(under(exempt_name, e) for e in rule.exempt), "plant the import outside the exempt modules"
    target.write_text(f"import {forbidden}.planted_module\n", encoding="utf-8")
    assert rule.violations(tmp_path) == [f"{target.relative_to(tmp_path)} imports {forbidden}.planted_module"]


@pytest.mark.parametrize("folder", [*PACKAGES, "tests"])
def test_no_grab_bag_module_names(folder: str) -> None:
    names = FORBIDDEN_MODULE_NAMES
    bad = [p for p in source_files(folder) if p.stem in names or p.parent.name in names]
    assert bad == []
