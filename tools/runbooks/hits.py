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
    score: float = 0.0  # the share of the search's term weight the section holds, 0-1 (tools/runbooks/scoring.py)

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
    hits: tuple[RunbookSection, ...]  # every section found, best first, good match or not
    searched: int = 0  # how many sections the index holds (counted when none matched)
    min_score: float = 0.0  # a section scoring below it is no good match

    @property
    def good_hits(self) -> tuple[RunbookSection, ...]:
        """The sections that fit the search: a score at or above the threshold."""
        return tuple(h for h in self.hits if h.score >= self.min_score)


def render_hits(found: RunbookHits) -> str:
    """`runbook sections matching ...:` then per hit its citation and its body, indented."""
    scope = f" for {found.service}" if found.service else ""
    if not found.hits:
        return f"no runbook section matches {found.query!r}{scope} ({found.searched} sections searched)."
    good = found.good_hits
    if not good:
        weak = "; ".join(f"{h.citation} (score {h.score:.2f})" for h in found.hits)
        return (
            f"no good match for {found.query!r}{scope}: every section found scores below {found.min_score:.2f} "
            f"(the share of the search's telling words it holds), so none documents this: {weak}"
        )
    lines = [f"runbook sections matching {found.query!r}{scope}, best first (cite them as shown):"]
    for rank, hit in enumerate(good, 1):
        lines.append(f"{rank}. {hit.citation} (score {hit.score:.2f})")
        lines += [f"   {line}" for line in hit.body.splitlines() if line.strip()]
    left = len(found.hits) - len(good)
    if left:
        lines.append(f"({left} more section{'s' if left > 1 else ''} scored below {found.min_score:.2f}: not shown)")
    return "\n".join(lines)
