"""Evidence kept from an observation the model has already read: a digest for older steps, a gist for one line.

The tools print findings in stable line forms (tools/metrics/query.py, logs.py, deploys.py), so a deterministic
filter keeps what a diagnosis cites and drops what it was read from:
- metrics: the `min · median · max · last` line, `change:`, `spike:`, `trend:`, `sawtooth:` and `stopped:` lines
  (the PromQL and the series go);
- logs: the `matched N lines · by level` counts and the top error signatures with their counts and times, plus
  one example line each (its concrete values); stack frames and the newest raw lines go;
- deploys: one line per deploy record (time, service/version, author, summary), and per commit of a git log
  (as payloads.py rewrites one);
- diffs: the deploy header and the changed lines (`-`/`+`), not context lines or file headers.
Raw output in no known form has its repeated lines folded (as the logs tool does at the source), or else keeps
its head and tail (context.truncate_observation), with a marker either way: nothing goes silently. The Trace
always keeps every observation whole: this only shapes what the model is re-sent.
"""

from __future__ import annotations

import re
from collections.abc import Collection

_STATS = re.compile(r"^min \S.* · median ")
_CHANGE = re.compile(r"^change: ")
_SPIKE = re.compile(r"^spike: ")  # a peak that came and went: what a recovered incident leaves
_TREND = re.compile(r"^(trend|sawtooth): ")  # a climb still going (a leak), or climbs that drop back (restarts)
_STOP = re.compile(r"^stopped: ")  # a series that ended, and whether the service or the collection stopped
_COUNTS = re.compile(r"^matched [\d,]+ lines")
_SIGNATURE = re.compile(r"^\d+\. [\d,]+x ")
_SUSPECT = re.compile(r"^\d+\. .+? \(score [\d.]+\): ")  # find_changes' ranked suspects, best first
_EXAMPLE = re.compile(r"^example: ")
_DEPLOY = re.compile(r"^\d{4}-\d\d-\d\dT[\d:]+Z \S+/\S+ ")
_GIT_COMMIT = re.compile(r"^commit [0-9a-f]{7,} \d{4}-")  # a git log commit as payloads.py rewrites it
_DIFF_HEADER = re.compile(r"^deploy \S+/\S+ at ")
_DIFF_CHANGE = re.compile(r"^[-+](?![-+]{2} )\s*\S")  # a changed line, not a `---`/`+++` file header
_DIFF_FILE = re.compile(r"^diff --git a/\S+ b/(\S+)")
# An unchanged `- name: X` line just above a changed `value:` is what the value belongs to (a container's env var).
_LIST_NAME = re.compile(r"^ \s*-\s*name:\s*(?P<name>\S+)")
_NAMED_VALUE = re.compile(r"^[-+]\s*(?:-\s*)?(?:value|valueFrom)\s*:")
_DOC_FILE = re.compile(r"(^|/)(CHANGELOG|CHANGES|HISTORY|README)[^/]*$|\.(md|rst|txt)$", re.IGNORECASE)
_SETTING = re.compile(r"^(?P<sign>[-+]) (?P<key>[\w.\-\[\]\"']+)\s*[:=]\s*(?P<value>.*)$")
_STATUS = re.compile(r"^(no |unknown |error)", re.IGNORECASE)
_EVIDENCE = (
    _STATS,
    _CHANGE,
    _SPIKE,
    _TREND,
    _STOP,
    _COUNTS,
    _SIGNATURE,
    _SUSPECT,
    _DEPLOY,
    _GIT_COMMIT,
    _DIFF_HEADER,
    _STATUS,
)
# What a one-line gist prefers, in order: the finding itself before the context around it.
_GIST_ORDER = (
    _SUSPECT,
    _SPIKE,
    _CHANGE,
    _TREND,
    _STOP,
    _DIFF_CHANGE,
    _SIGNATURE,
    _DEPLOY,
    _GIT_COMMIT,
    _STATUS,
    _COUNTS,
    _STATS,
)
_VARYING = re.compile(r"0x[0-9a-f]+|[0-9a-f]{8,}|\d+(?:[.,:]\d+)*", re.IGNORECASE)  # numbers, ids, hex, times
_MIN_FOLD = 3  # fold a group from this many lines: two alike lines are cheaper kept than summarised
_EXAMPLE_CHARS = 220
_MAX_EXAMPLES = 2


def evidence_lines(text: str) -> list[str]:
    """The lines of an observation that carry evidence (see the module docstring), in their original order."""
    return [line for _, line in indexed_evidence(text.splitlines())]


def indexed_evidence(lines: list[str]) -> list[tuple[int, str]]:
    """(line index, evidence as re-sent) for every evidence line after the first (header) line."""
    kept: list[tuple[int, str]] = []
    examples = 0
    changed_file, announced = "", ""  # the diff section being read; its name goes before its first change
    for index, line in enumerate(lines[1:], start=1):
        stripped = line.strip()
        if match := _DIFF_FILE.match(line):
            changed_file = match.group(1)
        elif _DIFF_CHANGE.match(line):  # unstripped: a diff line starts in column 0
            if changed_file and _DOC_FILE.search(changed_file):
                continue  # a changelog repeats the deploy summary the header already carries
            if changed_file and changed_file != announced:
                kept.append((index, f"{changed_file}:"))
                announced = changed_file
            if (named := _list_entry_name(lines, index)) and named not in kept:
                kept.append(named)
            kept.append((index, _compact_diff_line(line)))
        elif _EXAMPLE.match(stripped) and examples < _MAX_EXAMPLES:
            examples += 1
            kept.append((index, "   " + _shorten(stripped, _EXAMPLE_CHARS)))
        elif any(pattern.match(stripped) for pattern in _EVIDENCE):
            kept.append((index, line.rstrip()))
    return kept


def observation_digest(text: str) -> str | None:
    """The first line and the evidence lines, with a note of how much went; output in no known form has its
    repeated lines folded instead; None when neither applies."""
    lines = text.splitlines()
    evidence = evidence_lines(text)
    if not lines:
        return None
    if not evidence:
        return folded_repeats(lines)
    left_out = len(lines) - 1 - len(evidence)
    digest = "\n".join([lines[0], *evidence])
    if left_out <= 0:
        return text
    return f"{digest}\n[digest of a result you have read: {left_out:,} other lines left out]"


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


def is_diff(text: str) -> bool:
    """Whether the output holds a diff (a `diff --git` section): its changed lines are the finding."""
    return any(_DIFF_FILE.match(line) for line in text.splitlines())


def observation_gist(text: str, max_chars: int, skip: Collection[str] = ()) -> str:
    """The key finding on one line: change points, changed settings, top errors, deploys; else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "(empty)"
    return " | ".join(gist_findings(text, max_chars, skip)) or _shorten(_finding(_ranked(text, lines)[0]), max_chars)


def gist_findings(text: str, max_chars: int, skip: Collection[str] = ()) -> list[str]:
    """The findings of the gist, best first, within `max_chars` joined; those in `skip` (said already) left out,
    unless that leaves none."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    findings = [_finding(line) for line in _ranked(text, lines)] if lines else []
    findings = [finding for finding in findings if finding not in skip] or findings
    kept: list[str] = []
    for finding in findings:
        if len(" | ".join([*kept, finding])) > max_chars:
            break
        kept.append(finding)
    return kept


def _ranked(text: str, lines: list[str]) -> list[str]:
    evidence = [line.strip() for line in evidence_lines(text)]
    ranked = [line for pattern in _GIST_ORDER for line in evidence if pattern.match(line)]
    return _paired_changes(list(dict.fromkeys(ranked))) or [lines[0]]


def _paired_changes(lines: list[str]) -> list[str]:
    """`- key: 50` followed by `+ key: 200` -> `key: 50 -> 200`, the form a finding is quoted in."""
    paired: list[str] = []
    for line in lines:
        old = _SETTING.match(paired[-1]) if paired else None
        new = _SETTING.match(line)
        if old and new and old["sign"] == "-" and new["sign"] == "+" and old["key"] == new["key"]:
            paired[-1] = f"{new['key']}: {old['value']} -> {new['value']}"
        else:
            paired.append(line)
    return paired


def _finding(line: str) -> str:
    """A line reworded for the gist: signatures lose their list number, deploys their file list."""
    if _SIGNATURE.match(line) or _SUSPECT.match(line):
        return re.sub(r"^\d+\. ", "", line)
    if _DIFF_CHANGE.match(line):
        return " ".join(line.split())  # `+ id          BIGSERIAL` -> `+ id BIGSERIAL`: alignment says nothing
    return line.split("; files: ")[0] if _DEPLOY.match(line) or _GIT_COMMIT.match(line) else line


def _list_entry_name(lines: list[str], index: int) -> tuple[int, str] | None:
    """For a changed `value:` line, the unchanged `- name: X` line just above it, which says whose value changed
    (without it, a digested env-var change reads `value: false -> true`)."""
    if not _NAMED_VALUE.match(lines[index]):
        return None
    for back in range(index - 1, max(index - 4, 0), -1):
        if match := _LIST_NAME.match(lines[back]):
            return back, f"  name: {match['name']}"
    return None


def _compact_diff_line(line: str) -> str:
    """`+      maximumPoolSize: 200` -> `+ maximumPoolSize: 200` (YAML indentation costs tokens, says nothing)."""
    return f"{line[0]} {line[1:].strip()}".rstrip()


def _shorten(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"
