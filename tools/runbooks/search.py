"""search_runbooks: Markdown runbooks from a folder or a git repository, split at headings, searched with FTS5.

Each section (tools/runbooks/hits.py) is one row: file, heading path, the services the runbook names, body.
Search terms are parsed by the same safe term language as the log search and always reach FTS5 quoted; the terms
are OR-ed and ranked by bm25, so a long question still finds the section that shares most words with it. Hits
are cited as "Runbook: <file> § <heading>", the form answers quote.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.logs.model import search_text_from_query
from tools.logs.sqlite import fts_expression
from tools.runbooks.hits import RunbookHits, RunbookSection, render_hits
from tools.runbooks.scoring import section_scores
from tools.toolset import CheckWarning

__all__ = ["RunbookSection", "Runbooks", "markdown_files", "sections_from_markdown"]

_HEADING = re.compile(r"^(#{1,4})\s+(.+?)\s*#*\s*$")
_SERVICES = re.compile(r"^services\s*:\s*\[?([^\]\n]*)\]?\s*$", re.I | re.M)
_SERVICE_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
REFRESH_S = 60.0
# Terms are OR-ed, so words every runbook has would rank any section; they are dropped from a search.
STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
    )
)


def sections_from_markdown(file: str, text: str) -> list[RunbookSection]:
    """Split at #..#### headings; front matter (`services: order, payment`) names the services it covers."""
    services: tuple[str, ...] = ()
    if text.startswith("---"):
        front, _, text = text[3:].partition("\n---")
        found = _SERVICES.search(front)
        services = tuple(s.strip(" '\"") for s in found.group(1).split(",") if s.strip()) if found else ()
    sections: list[RunbookSection] = []
    title, heading, body = "", "", []
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match is None:
            body.append(line)
            continue
        if heading and "\n".join(body).strip():
            sections.append(RunbookSection(file, heading, services, "\n".join(body).strip()))
        level, name = len(match.group(1)), match.group(2).strip()
        title = name if level == 1 else title
        heading, body = name, []
    if heading and "\n".join(body).strip():
        sections.append(RunbookSection(file, heading, services, "\n".join(body).strip()))
    return (
        sections
        if sections
        else ([RunbookSection(file, title or file, services, text.strip())] if text.strip() else [])
    )


def _without_stopwords(query: str) -> str:
    """The query's words minus stopwords, before the term cap: a long error message keeps its telling words."""
    return " ".join(w for w in query.split() if w.strip(".,:;()'[]!?").lower() not in STOPWORDS)


def markdown_files(path: Path, git_ref: str = "HEAD") -> dict[str, str]:
    """name -> text of every *.md file: from `git_ref` when path is a git repository, else from the folder."""
    if (path / ".git").exists() or (path / "HEAD").is_file():
        return _files_from_git(path, git_ref)
    if not path.is_dir():
        raise ToolError(f"the runbook folder {path} does not exist.")
    return {
        str(p.relative_to(path)): p.read_text(encoding="utf-8", errors="replace") for p in sorted(path.rglob("*.md"))
    }


def _files_from_git(repo: Path, ref: str) -> dict[str, str]:
    if ref.startswith("-"):
        raise ToolError(f"invalid git ref {ref!r}")

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=20)
        if done.returncode != 0:
            raise ToolError(f"git {args[0]} failed in {repo}: {done.stderr.strip()[:200]}")
        return done.stdout

    names = [n for n in git("ls-tree", "-r", "--name-only", ref).splitlines() if n.endswith(".md")]
    return {name: git("show", f"{ref}:{name}") for name in names}


class Runbooks:
    """The search_runbooks tool over an in-memory FTS5 index, rebuilt when older than REFRESH_S."""

    def __init__(
        self,
        path: Path,
        *,
        git_ref: str = "HEAD",
        max_results: int = 3,
        max_section_chars: int = 1_200,
        min_score: float = 0.0,
    ):
        self.path, self.git_ref = Path(path), git_ref
        self.max_results, self.max_section_chars = max_results, max_section_chars
        self.min_score = min_score  # below it a section is no good match (its citation is shown, not its text)
        self._lock = threading.Lock()
        self._index: tuple[float, sqlite3.Connection, int] | None = None

    def specs(self) -> list[ToolSpec]:
        """search_runbooks."""
        return [tool(self.search_runbooks, description=_DOC.format(most=self.max_results, min_score=self.min_score))]

    def check(self) -> str:
        """How many runbooks and sections the index holds; a warning when there are none."""
        files, sections = self._counts()
        if not sections:
            raise CheckWarning(f"no Markdown runbooks found in {self.path}")
        return f"{files} runbooks, {sections} sections from {self.path}"

    def search(self, query: str, service: str = "", limit: int | None = None) -> list[RunbookSection]:
        """The best sections for the query (bm25), limited to runbooks for `service` or for every service."""
        parsed = search_text_from_query(query if '"' in query else _without_stopwords(query))
        text = replace(parsed, terms=tuple(t for t in parsed.terms if t.prefix or t.text.lower() not in STOPWORDS))
        if not text.terms:
            return []
        name = service.strip()
        if name and not _SERVICE_RX.match(name):
            raise ToolError(f"invalid service name {service!r}.")
        expression = fts_expression(replace(text, any_of=True))
        singles = [fts_expression(replace(text, terms=(t,))) for t in text.terms]
        with self._lock:
            db = self._db()
            rows = db.execute(
                "SELECT rowid, file, heading, services, body FROM runbooks WHERE runbooks MATCH ? "
                "AND (? = '' OR services = '' OR (',' || services || ',') LIKE ('%,' || ? || ',%') "
                "OR file LIKE ('%' || ? || '%')) ORDER BY bm25(runbooks, 0.0, 4.0, 0.0, 1.0) LIMIT ?",
                (expression, name, name, name, limit or self.max_results),
            ).fetchall()
            scores = section_scores(db, singles, [row[0] for row in rows])
        found = [
            RunbookSection(f, h, tuple(s.split(",")) if s else (), b, round(score, 2))
            for (_, f, h, s, b), score in zip(rows, scores, strict=True)
        ]
        return sorted(found, key=lambda r: -r.score)  # bm25's order among equals (sorted is stable)

    def search_runbooks(self, query: str, service: str = "") -> ToolResult:
        """Run search_runbooks (the description shown to the model is _DOC)."""
        cut = self.max_section_chars
        hits = tuple(
            replace(h, body=h.body if len(h.body) <= cut else h.body[:cut] + " …") for h in self.search(query, service)
        )
        found = RunbookHits(query, service.strip(), hits, 0 if hits else self._counts()[1], self.min_score)
        return ToolResult("ok" if found.good_hits else "no_data", render_hits(found), found)

    def _counts(self) -> tuple[int, int]:
        with self._lock:
            db = self._db()
            files, sections = db.execute("SELECT count(DISTINCT file), count(*) FROM runbooks").fetchone()
        return int(files), int(sections)

    def _db(self) -> sqlite3.Connection:
        """The index, rebuilt from the files when older than REFRESH_S (call with the lock held)."""
        if self._index and time.monotonic() - self._index[0] < REFRESH_S:
            return self._index[1]
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.execute(
            "CREATE VIRTUAL TABLE runbooks USING fts5(file UNINDEXED, heading, services UNINDEXED, body, "
            "tokenize='porter unicode61')"
        )
        rows = [
            (s.file, s.heading, ",".join(s.services), s.body)
            for name, text in markdown_files(self.path, self.git_ref).items()
            for s in sections_from_markdown(name, text)
        ]
        db.executemany("INSERT INTO runbooks VALUES (?, ?, ?, ?)", rows)
        if self._index:
            self._index[1].close()
        self._index = (time.monotonic(), db, len(rows))
        return db


_DOC = """\
Search the team's runbooks (Markdown, split at headings) for the section that explains a failure and what \
to do about it.
Use it once you know the symptom or error signature (e.g. "connection pool exhausted", "OOMKilled"), to \
find the documented cause, checks and fix; quote the section you rely on as "Runbook: <file> § <section>".
Legal values: query: the symptom in words (terms are OR-ed and ranked); service: limit to runbooks for that \
service (runbooks for every service are always included), empty = all.
Returns at most {most} sections, best first, each with its citation, its score (0-1: the share of the query's \
telling words it holds) and text; "no good match" (citations only) when none scores {min_score:g} or more."""
