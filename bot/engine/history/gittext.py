"""Raw `git log --stat` and `git show` output a tool handed over as it came, rewritten as compact lines.

A tool from elsewhere (an MCP server, a prototype) may hand over what git prints: every commit as a five-line
header (40-character hash, author with e-mail, a date in git's own format, an indented message), a file stat
drawn with `+` and `-`, and a diff with `index` and `---`/`+++` lines that repeat the `diff --git` line. The
rewrite keeps what a diagnosis cites and drops the layout:
- a tag or commit header becomes one line: `commit c50b68a 2026-11-30T15:02Z li.wei: <subject> | <body>`,
  and a log (no diff) gets a first line of its own, `git log: N commits, newest first`;
- a stat becomes `files: <dir>/{a, b}` on the commit's line, its summary line (`3 files changed, ...`) goes;
- a diff keeps its `diff --git` and `@@` lines and every changed and context line; `index`, `---` and `+++` go,
  and a doc file's part (a changelog: it repeats the message) is one line with its counts.
Each line is written with its role (a commit, a diff), so the digest cites them without reading them back.
Anything else is left alone (None). The Trace keeps the raw output: this only shapes what the model is sent.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

from bot.engine.history.digest import Cited

_COMMIT = re.compile(r"^commit ([0-9a-f]{7,40})\b(.*)$")
_TAG = re.compile(r"^tag (\S+)$")
_PERSON = re.compile(r"^(Author|Tagger):\s*(?P<name>.*?)\s*(<[^>]*>)?\s*$")
_DATE = re.compile(r"^(Date|AuthorDate|CommitDate):\s*(?P<date>.+)$")
_STAT = re.compile(r"^ (?P<file>\S.*?)\s+\|\s+(\d+|Bin\b)")
_STAT_SUMMARY = re.compile(r"^ \d+ files? changed")
_DIFF_NOISE = re.compile(r"^(index [0-9a-f]+\.\.[0-9a-f]+|--- (a/|/dev/null)|\+\+\+ (b/|/dev/null))")
_DOC_FILE = re.compile(r"(^|/)(CHANGELOG|CHANGES|HISTORY|README)[^/]*$|\.(md|rst|txt)$", re.IGNORECASE)
_HASH_CHARS = 7
_MESSAGE_CHARS = 300


def lines_from_git(output: str) -> list[Cited] | None:
    """The compact lines of raw `git log` / `git show` output, each commit and diff line marked; None for anything
    else."""
    lines = output.splitlines()
    if not lines or not (_COMMIT.match(lines[0]) or _TAG.match(lines[0])):
        return None
    if not any(_PERSON.match(line) for line in lines[1:4]):
        return None
    out: list[Cited] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _COMMIT.match(line) or _TAG.match(line):
            header, index = _header(lines, index)
            out.append(header)
        elif line.startswith("diff --git "):
            section, index = _diff_section(lines, index)
            out += [Cited(text, "diff") for text in section]
        else:
            if line.strip():
                out.append(Cited(line))
            index += 1
    if any(line.role == "diff" for line in out):
        return out
    commits = sum(line.role == "commit" for line in out)  # a log: a header line first, as the tools print
    return [Cited(f"git log: {commits} commit{'s' if commits != 1 else ''}, newest first"), *out]


def _diff_section(lines: list[str], start: int) -> tuple[list[str], int]:
    """One file's diff without its `index`/`---`/`+++` lines (a doc file's as a count: it repeats the message)."""
    index = start + 1
    while index < len(lines) and not lines[index].startswith(("diff --git ", "commit ")):
        index += 1
    body = [line for line in lines[start + 1 : index] if not _DIFF_NOISE.match(line)]
    if _DOC_FILE.search(lines[start]):
        added = sum(line.startswith("+") for line in body)
        removed = sum(line.startswith("-") for line in body)
        return [f"{lines[start]} (+{added} -{removed} lines of a doc file, not shown)"], index
    return [lines[start], *body], index


def _header(lines: list[str], start: int) -> tuple[Cited, int]:
    """One line for the tag or commit header at `start`, with its message and stat; and the index after it. A
    commit's gist leaves its files out."""
    commit = _COMMIT.match(lines[start])
    kind, name = ("commit", commit[1][:_HASH_CHARS] + commit[2]) if commit else ("tag", lines[start][4:])
    who, when, message, files = "", "", [], []
    index = start + 1
    while index < len(lines) and not lines[index].startswith(("commit ", "diff --git ", "tag ")):
        line = lines[index]
        if (person := _PERSON.match(line)) and not who:
            who = person["name"]
        elif (date := _DATE.match(line)) and not when:
            when = _iso(date["date"])
        elif stat := _STAT.match(line):
            files.append(stat["file"].strip())
        elif line.strip() and not _STAT_SUMMARY.match(line):
            message.append(line.strip())
        index += 1
    text = " | ".join(message)
    text = text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…"
    head = " ".join(part for part in (kind, name, when, who) if part)
    said = f"{head}: {text}" if text else head
    return Cited(f"{said}{_files_text(files)}", "commit" if commit else "other", said), index


def _files_text(files: list[str]) -> str:
    """`; files: services/order/{a, b}` (a common folder written once)."""
    if not files:
        return ""
    folder = os.path.commonpath(files) if len(files) > 1 and all("/" in f for f in files) else ""
    if folder and folder not in files:
        return f"; files: {folder}/{{{', '.join(f[len(folder) + 1 :] for f in files)}}}"
    return "; files: " + ", ".join(files)


def _iso(date: str) -> str:
    """git's `Mon Nov 30 15:02:00 2026 +0000` as `2026-11-30T15:02Z` (UTC); any other form as given."""
    for form in ("%a %b %d %H:%M:%S %Y %z", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M:%S %z"):
        try:
            moment = datetime.strptime(date.strip(), form).astimezone(UTC)
        except ValueError:
            continue
        return moment.strftime("%Y-%m-%dT%H:%MZ" if moment.second == 0 else "%Y-%m-%dT%H:%M:%SZ")
    return date.strip()
