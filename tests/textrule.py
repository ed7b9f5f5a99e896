"""The static check behind tests/test_architecture.py's rule that no module outside tools/ parses a tool's text.

A module parses a tool's text when it uses `re` and touches a step's observation (`.observation`, or a name or
parameter `observation(s)`), or when it writes a regular expression or a prefix test against one of the line forms
the tools print (`change:`, `spike:`, `matched N lines`, `Runbook: ` ...). Pure: it reads source, never imports it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

TOOL_LINE_FORMS = re.compile(
    r"(?<![\w-])(change|spike|trend|sawtooth|stopped|promql|example|onset|lookback|waiting|last terminated"
    r"|change-cause):|series \(mean per|signatures \(|\(score |(?<![\w-])matched\b|(?<![\w-])newest\b|new since"
    r"|new signatures|Runbook: | · median|; files:|; states:|diff against",
    re.IGNORECASE,
)
_PREFIX_TESTS = frozenset({"startswith", "endswith", "removeprefix", "removesuffix"})


def tool_text_parsing(path: Path) -> str:
    """Why the module at `path` parses a tool's text ("" when it does not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    nodes = list(ast.walk(tree))
    uses_re = any(
        (isinstance(n, ast.Import) and any(a.name == "re" for a in n.names))
        or (isinstance(n, ast.ImportFrom) and n.module == "re" and not n.level)
        for n in nodes
    )
    touches = any(
        (isinstance(n, ast.Attribute) and n.attr == "observation")
        or (isinstance(n, ast.Name) and n.id in ("observation", "observations"))
        or (isinstance(n, ast.arg) and n.arg in ("observation", "observations"))
        for n in nodes
    )
    if uses_re and touches:
        return "a regular expression in a module that reads a step's observation"
    forms = [text for n in nodes if isinstance(n, ast.Call) and _is_pattern_call(n) for text in _literals(n.args)]
    form = next((f for f in forms if TOOL_LINE_FORMS.search(f)), "")
    return f"a pattern for a tool's line form: {form!r}" if form else ""


def _is_pattern_call(call: ast.Call) -> bool:
    """`re.<function>(...)` or `<text>.startswith(...)` and its kin."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    return (isinstance(func.value, ast.Name) and func.value.id == "re") or func.attr in _PREFIX_TESTS


def _literals(args: Iterable[ast.expr]) -> list[str]:
    return [n.value for a in args for n in ast.walk(a) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
