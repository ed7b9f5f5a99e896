"""Evidence kept from a result the model has already read: a digest for older steps, a gist for one line.

What a diagnosis cites is known where a result's lines are made, never read back from its text: a built-in
tool's data says which lines of its text are statistics, findings, signatures, deploys or a diff (evidence.py
renders them with the tools' own renderers), and a raw payload's rewrite marks the lines it writes (payloads.py).
From those `Cited` lines a deterministic filter keeps what a diagnosis cites and drops what it was read from:
- metrics: the `min · median · max · last` line and the change, spike, trend, sawtooth and stopped lines (the
  PromQL and the series go);
- logs: the counts by level, the top signatures with their counts and times, and one example line each (its
  concrete values), at most _MAX_EXAMPLES in all; stack frames and the newest raw lines go;
- deploys: one line per deploy record, and per commit of a git log;
- diffs: the changed lines (`-`/`+`) under their file's name, not context lines or file headers.
A result with no cited line (a text-only tool's, an MCP tool's) is never parsed: its repeated lines are folded,
or it keeps its head and tail (context.truncate_observation), with a marker either way: nothing goes silently.
The Trace always keeps every result whole: this only shapes what the model is re-sent.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

Role = Literal[
    "suspect",
    "spike",
    "change",
    "trend",
    "stop",
    "diff",
    "new",
    "signature",
    "example",
    "event",
    "deploy",
    "commit",
    "status",
    "counts",
    "stats",
    "other",
]
# What a one-line gist prefers, in order: the finding itself before the context around it.
_GIST_ORDER: tuple[Role, ...] = (
    "suspect",
    "spike",
    "change",
    "trend",
    "stop",
    "diff",
    "new",
    "event",
    "signature",
    "deploy",
    "commit",
    "status",
    "counts",
    "stats",
)
# A unified diff's own format (what git prints), not a tool's line form: its file sections and changed lines.
_DIFF_FILE = re.compile(r"^diff --git a/\S+ b/(\S+)")
_DIFF_CHANGE = re.compile(r"^[-+](?![-+]{2} )\s*\S")  # a changed line, not a `---`/`+++` file header
# An unchanged `- name: X` line just above a changed `value:` is what the value belongs to (a container's env var).
_LIST_NAME = re.compile(r"^ \s*-\s*name:\s*(?P<name>\S+)")
_NAMED_VALUE = re.compile(r"^[-+]\s*(?:-\s*)?(?:value|valueFrom)\s*:")
_DOC_FILE = re.compile(r"(^|/)(CHANGELOG|CHANGES|HISTORY|README)[^/]*$|\.(md|rst|txt)$", re.IGNORECASE)
_SETTING = re.compile(r"^(?P<sign>[-+]) (?P<key>[\w.\-\[\]\"']+)\s*[:=]\s*(?P<value>.*)$")
_VARYING = re.compile(r"0x[0-9a-f]+|[0-9a-f]{8,}|\d+(?:[.,:]\d+)*", re.IGNORECASE)  # numbers, ids, hex, times
_MIN_FOLD = 3  # fold a group from this many lines: two alike lines are cheaper kept than summarised
_EXAMPLE_CHARS = 220
_MAX_EXAMPLES = 2


@dataclass(frozen=True)
class Cited:
    """A line of a result, as its text shows it, and what it is; `gist` is how a one-line gist says it when that
    is shorter (a signature without its rank, a deploy without its files)."""

    text: str
    role: Role = "other"
    gist: str = ""


@dataclass(frozen=True)
class Reading:
    """A result as the model reads it, and its cited lines, each with its line index in `text` (-1: not in it)."""

    text: str
    cited: tuple[tuple[int, Cited], ...] = ()


@dataclass(frozen=True)
class Kept:
    """One evidence line as a digest re-sends it; `role` None for a line that only labels the next (a file name)."""

    index: int
    text: str
    role: Role | None


def kept_lines(reading: Reading) -> list[Kept]:
    """The evidence of a result (see the module docstring), in its order; the first (header) line is not among it."""
    kept: list[Kept] = []
    examples = 0
    diff: list[tuple[int, str]] = []  # a diff's lines, read as one run
    for index, line in reading.cited:
        if line.role == "diff":
            diff.append((index, line.text))
            continue
        kept += _diff_evidence(diff)
        diff = []
        if index == 0 or line.role == "other" or (line.role == "example" and examples >= _MAX_EXAMPLES):
            continue
        if line.role == "example":
            examples += 1
            kept.append(Kept(index, "   " + _shorten(line.text.strip(), _EXAMPLE_CHARS), "example"))
        else:
            kept.append(Kept(index, line.text.rstrip(), line.role))
    return kept + _diff_evidence(diff)


def evidence_lines(reading: Reading) -> list[str]:
    """The evidence lines of a result as a digest re-sends them."""
    return [k.text for k in kept_lines(reading)]


def indexed_evidence(reading: Reading) -> list[tuple[int, str]]:
    """(line index in the result's text, the line as re-sent) for every evidence line, findings before examples:
    what a cut keeps, in the order it keeps them while room is left."""
    return _findings_first(kept_lines(reading))


def _findings_first(kept: Sequence[Kept]) -> list[tuple[int, str]]:
    # An example only illustrates the signature above it: in a cut, every signature goes before any example.
    return [(k.index, k.text) for k in sorted(kept, key=lambda k: k.role == "example")]


def observation_digest(reading: Reading) -> str | None:
    """The first line and the evidence lines, with a note of how much went; a result with no cited line has its
    repeated lines folded instead; None when neither applies."""
    lines = reading.text.splitlines()
    kept = kept_lines(reading)
    if not lines:
        return None
    if not kept:
        return folded_repeats(lines)
    left_out = len(lines) - 1 - len(kept)
    if left_out <= 0:
        return reading.text
    digest = "\n".join([lines[0], *(k.text for k in kept)])
    return f"{digest}\n[digest of a result you have read: {left_out:,} other lines left out]"


def resent(reading: Reading, max_chars: int, *, digest: bool) -> tuple[str, list[tuple[int, str]]]:
    """A result as it is re-sent before any cut, and its evidence lines by line index in that text: the evidence
    digest when `digest` and it is shorter; else the text, a long one with no cited line with its repeats folded."""
    kept = kept_lines(reading)
    indexed = _findings_first(kept)
    if digest:
        shown = observation_digest(reading)
        if shown is None or len(shown) >= len(reading.text):
            return reading.text, indexed
        # In a digest the evidence is every line after the first but the file names that label a diff's changes.
        return shown, [(line, k.text) for line, k in enumerate(kept, 1) if k.role] if kept else []
    if len(reading.text) <= max_chars or kept:
        return reading.text, indexed
    return folded_repeats(reading.text.splitlines()) or reading.text, []


def masked(text: str) -> str:
    """`text` with its numbers, ids, hex and times replaced by `#`: what lines alike share."""
    return _VARYING.sub("#", text)


def folded_repeats(lines: list[str]) -> str | None:
    """Raw output (log lines, stack frames, points) with lines that differ only in numbers and ids folded into
    the first of them, a count and the last one, as tools/logs/query.py does at the source; None if nothing repeats."""
    groups: dict[str, list[str]] = {}
    for line in lines[1:]:
        groups.setdefault(masked(line.strip()), []).append(line.rstrip())
    if all(len(members) < _MIN_FOLD for members in groups.values()):
        return None
    folded = [lines[0]]
    for members in groups.values():
        if len(members) < _MIN_FOLD:
            folded += members
            continue
        last = _shorten(members[-1].strip(), _EXAMPLE_CHARS)
        folded += [members[0], f"  … {len(members) - 1:,} more like this, the last: {last}"]
    return "\n".join([*folded, "[lines alike but for numbers and ids folded into the first, a count and the last]"])


def is_diff(reading: Reading) -> bool:
    """Whether the result holds a diff (a `diff --git` section): its changed lines are the finding."""
    return any(line.role == "diff" and _DIFF_FILE.match(line.text) for _, line in reading.cited)


def observation_gist(reading: Reading, max_chars: int) -> str:
    """The key finding on one line: change points, changed settings, top errors, deploys; else the first line."""
    lines = [line.strip() for line in reading.text.splitlines() if line.strip()]
    if not lines:
        return "(empty)"
    return " | ".join(gist_findings(reading, max_chars)) or _shorten((_ranked(reading) or lines)[0], max_chars)


def gist_findings(reading: Reading, max_chars: int, skip: Collection[str] = ()) -> list[str]:
    """The findings of the gist, best first, within `max_chars` joined; those in `skip` (said already) left out,
    unless that leaves none. A result with no cited line has its first line as its one finding."""
    lines = [line.strip() for line in reading.text.splitlines() if line.strip()]
    findings = (_ranked(reading) or lines[:1]) if lines else []
    findings = [finding for finding in findings if finding not in skip] or findings
    kept: list[str] = []
    for finding in findings:
        if len(" | ".join([*kept, finding])) > max_chars:
            break
        kept.append(finding)
    return kept


def _ranked(reading: Reading) -> list[str]:
    """The gist's findings, best first: the cited lines by _GIST_ORDER, each once, in the words a gist uses."""
    words: dict[tuple[Role | None, str], str] = {
        (line.role, line.text.strip()): line.gist for _, line in reading.cited if line.gist
    }
    kept = [(k.role, k.text.strip()) for k in kept_lines(reading) if k.role]
    ranked = dict.fromkeys(item for role in _GIST_ORDER for item in kept if item[0] == role)
    return [words.get(item) or _finding(item) for item in _paired_changes(list(ranked))]


def _paired_changes(items: list[tuple[Role | None, str]]) -> list[tuple[Role | None, str]]:
    """`- key: 50` followed by `+ key: 200` -> `key: 50 -> 200`, the form a finding is quoted in."""
    paired: list[tuple[Role | None, str]] = []
    for role, line in items:
        old = _SETTING.match(paired[-1][1]) if paired and paired[-1][0] == "diff" and role == "diff" else None
        new = _SETTING.match(line) if old else None
        if old and new and old["sign"] == "-" and new["sign"] == "+" and old["key"] == new["key"]:
            paired[-1] = (None, f"{new['key']}: {old['value']} -> {new['value']}")
        else:
            paired.append((role, line))
    return paired


def _finding(item: tuple[Role | None, str]) -> str:
    role, line = item
    return " ".join(line.split()) if role == "diff" else line  # `+ id     BIGSERIAL` -> `+ id BIGSERIAL`


def _diff_evidence(lines: Sequence[tuple[int, str]]) -> list[Kept]:
    """A diff's changed lines, compacted, each file's name before its first change; a doc file's changes go."""
    kept: list[Kept] = []
    changed_file, announced = "", ""  # the diff section being read; its name goes before its first change
    for position, (index, line) in enumerate(lines):
        if match := _DIFF_FILE.match(line):
            changed_file = match.group(1)
        elif _DIFF_CHANGE.match(line):
            if changed_file and _DOC_FILE.search(changed_file):
                continue  # a changelog repeats the deploy summary the header already carries
            if changed_file and changed_file != announced:
                kept.append(Kept(index, f"{changed_file}:", None))
                announced = changed_file
            if (named := _list_entry_name(lines, position)) and named not in kept:
                kept.append(named)
            kept.append(Kept(index, _compact_diff_line(line), "diff"))
    return kept


def _list_entry_name(lines: Sequence[tuple[int, str]], position: int) -> Kept | None:
    """For a changed `value:` line, the unchanged `- name: X` line just above it, which says whose value changed
    (without it, a digested env-var change reads `value: false -> true`)."""
    if not _NAMED_VALUE.match(lines[position][1]):
        return None
    for index, line in reversed(lines[max(position - 3, 0) : position]):
        if match := _LIST_NAME.match(line):
            return Kept(index, f"  name: {match['name']}", None)
    return None


def _compact_diff_line(line: str) -> str:
    """`+      maximumPoolSize: 200` -> `+ maximumPoolSize: 200` (YAML indentation costs tokens, says nothing)."""
    return f"{line[0]} {line[1:].strip()}".rstrip()


def _shorten(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"
