"""The dependency directions between the rooms of the tree, checked by reading every import (ast).

A violation fails in review.

Each rule names a room of the tree, what it must not import, and what it may import despite that. The rooms:
engine (the loop) < engine.text (its reader); playbook (model-free); routing (picks the path); safety (pure text
rules); slack and http (surfaces, given the agent as a callable); store; durable (the one job runner both
surfaces queue on); wiring and cli (the only Settings readers).

A tool's text is for the model; code outside tools/ reads the tool's typed data (tools/results.py), never the text:
the second half of this file finds modules that parse a tool's text, and plants one to show it would.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.textrule import tool_text_parsing

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "tools", "prompts")
FORBIDDEN_MODULE_NAMES = {"utils", "helpers", "common", "misc", "manager"}
BOLT = ("slack_bolt", "slack_sdk")
# Pure functions over plain data in tools/ (no backend, no client): the playbook shares them with the tools that
# the model calls, so find_changes and the playbook rank suspects, read diffs, tell operational events (a failover)
# and read time windows by one set of rules (tools.timerange may raise the interface's ToolError).
SHARED_RULES = (
    "tools.analysis.ranking",
    "tools.analysis.changeclass",
    "tools.analysis.placement",
    "tools.analysis.reasons",
    "tools.analysis.configdiff",
    "tools.analysis.configtree",
    "tools.analysis.events",
    "tools.timerange",
)
# The tools' typed results, the accessors that find them on a step, and the functions that render each fact as the
# text shows it (so a reader can quote it exactly): frozen dataclasses and pure functions with no client or backend
# behind them, so every room that reads results may import them (the Slack surface too: it reads what a step found,
# it never calls a tool). tools.resultjson is their stored form, read by the engine's trace codec.
RESULT_TYPES = (
    "tools.results",
    "tools.resultjson",
    "tools.metrics.series",
    "tools.metrics.views",
    "tools.metrics.chartline",
    "tools.logs.summary",
    "tools.logs.render",
    "tools.logs.model",
    "tools.deploys.records",
    "tools.kubernetes.objects",
    "tools.runbooks.hits",
    "tools.database.sessions",
    "tools.database.locks",
    "tools.database.replication",
    "tools.database.storage",
    "tools.database.units",
    "tools.database.statements",
    "tools.analysis.ranking",
    "tools.calculate",
)
# The detectors' outputs (ChangePoint, Spike, Stop, Trend, Sawtooth) are part of a MetricSeries; their modules are
# pure functions over numbers.
DETECTOR_OUTPUTS = ("tools.analysis.changepoints", "tools.analysis.trends")


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
    Rule("config is a leaf", ("bot/config",), PACKAGES, allowed=("bot.config",)),
    Rule(
        "only wiring and cli read Settings", PACKAGES, ("bot.config",), exempt=("bot.wiring", "bot.cli", "bot.config")
    ),
    Rule("only cli builds through wiring", PACKAGES, ("bot.wiring", "bot.cli"), exempt=("bot.wiring", "bot.cli")),
    Rule("tools never import bot", ("tools",), ("bot",)),
    Rule(
        "engine knows tools through their interface and results",
        ("bot/engine", "bot/routing"),
        ("tools",),
        allowed=("tools.base", *RESULT_TYPES),
    ),
    Rule(
        "the playbook knows tools through their interface, results and the shared rules",
        ("bot/playbook",),
        ("tools",),
        allowed=("tools.base", *SHARED_RULES, *RESULT_TYPES),
    ),
    *(
        Rule(
            f"results are plain data: {m}",
            (f"{m.replace('.', '/')}.py",),
            ("tools", "bot"),
            allowed=("tools.base", *SHARED_RULES, *RESULT_TYPES, *DETECTOR_OUTPUTS),
        )
        for m in RESULT_TYPES
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
        "slack gets the agent as a callable and reads results, never a tool",
        ("bot/slack",),
        ("tools", "openai", "bot.engine.llm", "bot.engine.loop", "bot.playbook", "bot.routing", "bot.http"),
        allowed=RESULT_TYPES,
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
        "the job runner knows the engine's vocabulary, no surface, store or backend",
        ("bot/durable",),
        ("bot", "tools", "openai", *BOLT),
        allowed=("bot.durable", "bot.engine.types"),
    ),
    # The two text boundaries, each passed once: text is cleaned (and a pasted secret redacted) where it enters,
    # and redacted where it leaves (bot.safety.outbound for Slack, the API and the terminal; the trace stores; the
    # log filter). The tool boundary gets its redactor from wiring. Nothing in between repeats either pass.
    Rule(
        "text is cleaned where it enters, once",
        PACKAGES,
        ("bot.safety.inbound.clean_inbound",),
        exempt=(
            "bot.safety",
            "bot.slack.intake.events",
            "bot.http.api",
            "bot.http.alerts",
            "bot.cli.diagnosis",
            "bot.cli.inspection",
        ),
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


# -- No module outside tools/ parses a tool's text ------------------------------------------------------------------
# tests/textrule.py says when a module parses a tool's text. Every fact a reader needs is in the results' data
# (tools/results.py); only the modules below work on the text itself, and none of them reads a fact out of it.
TEXT_BY_DESIGN = {  # text is what these modules are about; none of them reads a fact out of a tool's text
    "bot.safety.grounding": "checks the answer's numbers and versions against the text the model read",
    "bot.safety.redact": "removes secrets from every text that is stored or sent, a tool's text included",
    "bot.engine.history.payloads": "rewrites text-only (MCP) tools' JSON and git payloads, marking the lines it writes",
    "bot.engine.history.memory": "the model's memory of earlier steps is text; its patterns shorten its own lines",
    "bot.eval.scoring": "scores an answer and the texts behind it against a scenario's facts, as a reader would",
}


def tool_text_parsers(root: Path = ROOT) -> dict[str, str]:
    """Every module under bot/ that parses a tool's text, and why."""
    found = {module_name(path, root): tool_text_parsing(path) for path in source_files("bot", root=root)}
    return {name: why for name, why in found.items() if why}


def test_no_module_outside_tools_parses_a_tools_text_but_the_listed_ones() -> None:
    found = tool_text_parsers()
    assert sorted(set(found) - set(TEXT_BY_DESIGN)) == [], found  # read the data: tools/results.py
    assert sorted(TEXT_BY_DESIGN) == sorted(found)  # an entry that no longer works on a tool's text: strike it


@pytest.mark.parametrize(
    "source",
    [
        "import re\n\n\ndef ratio(step):\n    return re.search(r'x([\\d.]+)', step.observation)\n",
        "def changed(text):\n    return [line for line in text.splitlines() if line.startswith('spike:')]\n",
        "import re\n\nMATCHED = re.compile(r'^matched (?P<count>[\\d,]+) lines')\n",
    ],
    ids=["regex-over-observation", "prefix-test-of-a-line-form", "pattern-of-a-line-form"],
)
def test_the_text_rule_fails_on_a_planted_parser(source: str, tmp_path: Path) -> None:
    target = tmp_path / "bot" / "slack" / "planted.py"
    target.parent.mkdir(parents=True)
    target.write_text(source, encoding="utf-8")
    assert list(tool_text_parsers(tmp_path)) == ["bot.slack.planted"]


def test_the_text_rule_lets_text_that_is_not_a_tools_be() -> None:
    clean = ROOT / "bot" / "routing" / "intent.py"  # regular expressions over the user's question
    assert "import re" in clean.read_text(encoding="utf-8") and tool_text_parsing(clean) == ""
