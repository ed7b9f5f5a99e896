"""The tools a runbook tells its reader to call, and those of them a toolset lacks.

A runbook written for a cluster with Kubernetes says "`query_pods`: the last termination says OOMKilled"; where the
Kubernetes toolset is off, the model follows it into a tool it does not have and spends a step on the error.
`opsbot doctor` names such runbooks. A tool is cited by its name (`verb_object`, as the catalogue names tools), in
backticks or not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Protocol

_TOOL_NAME_RX = re.compile(
    r"(?<![\w./-])((?:query|search|find|list|calculate|get|describe)_[a-z0-9]+(?:_[a-z0-9]+)*)\b"
)


def tools_named(text: str) -> list[str]:
    """The tool names a runbook's text cites, in order, once each."""
    return list(dict.fromkeys(_TOOL_NAME_RX.findall(text)))


def missing_tools(files: Mapping[str, str], available: Collection[str]) -> dict[str, list[str]]:
    """file -> the tools it cites that are not in `available` (files citing none missing are left out)."""
    out = {}
    for name, text in sorted(files.items()):
        lacking = [t for t in tools_named(text) if t not in available]
        if lacking:
            out[name] = lacking
    return out


class _Named(Protocol):
    @property
    def name(self) -> str: ...


def runbooks_lacking(
    path: Path, git_ref: str, toolset: Callable[[], Sequence[_Named]], enabled: bool = True
) -> tuple[int, dict[str, list[str]]]:
    """How many runbooks there are at `path` and, per file, the tools it cites that `toolset()` (built only when a
    runbook cites a tool) lacks; (0, {}) when runbooks are off. A ToolError when they cannot be read."""
    from tools.runbooks.search import markdown_files

    files = markdown_files(path, git_ref) if enabled else {}
    if not any(tools_named(text) for text in files.values()):
        return len(files), {}
    return len(files), missing_tools(files, {spec.name for spec in toolset()})
