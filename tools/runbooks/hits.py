"""What search_runbooks found, as frozen values: runbook sections (file, heading path, services, body) and the
tool's result, with the text the model reads rendered from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tools.base import ToolData


@dataclass(frozen=True)
class RunbookSection:
    file: str
    heading: str  # "Title › Section" path below the document title
    services: tuple[str, ...]
    body: str

    @property
    def citation(self) -> str:
        """`Runbook: <file> § <heading>`, the form answers quote."""
        return f"Runbook: {self.file} § {self.heading}"


@dataclass(frozen=True)
class RunbookHits(ToolData):
    """The best sections for a search, best first, each body as shown (cut at the tool's limit)."""

    kind: ClassVar[str] = "runbook_hits"
    query: str
    service: str  # "" for every service
    hits: tuple[RunbookSection, ...]
    searched: int = 0  # how many sections the index holds (counted when none matched)


def render_hits(found: RunbookHits) -> str:
    """`runbook sections matching ...:` then per hit its citation and its body, indented."""
    scope = f" for {found.service}" if found.service else ""
    if not found.hits:
        return f"no runbook section matches {found.query!r}{scope} ({found.searched} sections searched)."
    lines = [f"runbook sections matching {found.query!r}{scope}, best first (cite them as shown):"]
    for rank, hit in enumerate(found.hits, 1):
        lines += [f"{rank}. {hit.citation}", *(f"   {line}" for line in hit.body.splitlines() if line.strip())]
    return "\n".join(lines)
