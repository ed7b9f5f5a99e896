"""The metric catalogue's PromQL templates: their placeholders, their checks, and the catalogue of one service.

A template names the service label and the service as `$label` and `$service` (or `${label}`, `${service}`). Any
other `$` belongs to PromQL: label_replace's `"$1"` or `"${name}"` is left as it is, so such a template never
crashes a diagnosis. A placeholder where one is expected that is neither (`$servce` in a label matcher, `$lable`
as a label name) is a problem, found when the catalogue is loaded: `doctor` and `toolsets` report it and
query_metrics answers it as an error for that metric alone.

A service may have its own catalogue (a mixed stack: Java services on `application`, a Go service on
`app_kubernetes_io_name`): its own label, its own templates for some names, and names it does not measure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from tools.discovery import did_you_mean
from tools.metrics.series import MetricQuery

PLACEHOLDERS = ("label", "service")
_PLACEHOLDER_RX = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_]\w*)\}|(?P<bare>[A-Za-z_]\w*))")
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_MATCH_OPS = ("=~", "!~", "!=", "=")


@dataclass(frozen=True)
class ServiceCatalogue:
    """One service's own part of the catalogue: its label ("" = the global one), the templates it replaces, and
    the catalogue names it does not measure (a Go service has no connection pool)."""

    label: str = ""
    metrics: Mapping[str, MetricQuery] = field(default_factory=dict)
    not_measured: frozenset[str] = frozenset()


def render(promql: str, *, label: str, service: str) -> str:
    """The template with `$label`/`$service` replaced; `service` is already escaped for a PromQL string. Every
    other `$` stays as PromQL's own."""
    values = {"label": label, "service": service}

    def replace(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        return values.get(name, match.group(0))

    return _PLACEHOLDER_RX.sub(replace, promql)


def template_problems(promql: str, *, needs_service: bool = True) -> list[str]:
    """What is wrong with a template, one line each; [] when it can be used."""
    if not promql.strip():
        return ["the PromQL template is empty"]
    problems = []
    names = set()
    for name, where in _placeholders(promql):
        names.add(name)
        if name not in PLACEHOLDERS and where != "argument":
            hint = did_you_mean(f"${name}", [f"${known}" for known in PLACEHOLDERS])
            problems.append(f"unknown placeholder ${name}{hint}; a template may use $label and $service")
    problems += _structure_problems(promql)
    if needs_service and "service" not in names:
        problems.append("the template never names $service, so every service would get the same series")
    return problems


def _placeholders(promql: str) -> Iterator[tuple[str, str]]:
    """Each `$name` with where it stands: "code" (outside strings), "matcher" (a label matcher's value) or
    "argument" (another string, e.g. label_replace's replacement, where `$name` is PromQL's own)."""
    for start, end, quoted, matcher in segments(promql):
        where = "code" if not quoted else "matcher" if matcher else "argument"
        for match in _PLACEHOLDER_RX.finditer(promql, start, end):
            yield match.group("braced") or match.group("bare"), where


def segments(promql: str) -> Iterator[tuple[int, int, bool, bool]]:
    """(start, end, is a string, is a label matcher's value) spans covering the template."""
    index, start, depth = 0, 0, list[str]()
    while index < len(promql):
        char = promql[index]
        if char in "\"'`":
            yield start, index, False, False
            end = _string_end(promql, index)
            before = promql[:index].rstrip()
            matcher = bool(depth) and depth[-1] == "{" and before.endswith(_MATCH_OPS)
            yield index, end, True, matcher
            index = start = end
            continue
        if char in _OPENERS:
            depth.append(char)
        elif char in _OPENERS.values() and depth:
            depth.pop()
        index += 1
    yield start, len(promql), False, False


def _string_end(promql: str, start: int) -> int:
    """The index just past the string literal that opens at `start` (the end of the text when unterminated)."""
    quote, index = promql[start], start + 1
    while index < len(promql):
        if promql[index] == "\\" and quote != "`":
            index += 2
            continue
        if promql[index] == quote:
            return index + 1
        index += 1
    return len(promql)


def _structure_problems(promql: str) -> list[str]:
    """Brackets that do not pair up and strings that never end, outside string literals."""
    stack: list[str] = []
    for start, end, quoted, _ in segments(promql):
        text = promql[start:end]
        if quoted:
            if len(text) < 2 or text[-1] != text[0] or text.endswith("\\" + text[0]):
                return [f"a string that starts at character {start + 1} never ends"]
            continue
        for offset, char in enumerate(text):
            if char in _OPENERS:
                stack.append(char)
            elif char in _OPENERS.values() and (not stack or _OPENERS[stack.pop()] != char):
                return [f"the {char!r} at character {start + offset + 1} closes nothing"]
    if stack:
        return [f"{len(stack)} bracket(s) never closed: {''.join(stack)}"]
    return []


def catalogue_problems(
    catalogue: Mapping[str, MetricQuery], services: Mapping[str, ServiceCatalogue] | None = None
) -> dict[str, list[str]]:
    """Per catalogue path ("p99_latency", "inventory/p99_latency"), the problems of its template; only the broken."""
    found = {name: _query_problems(query) for name, query in catalogue.items()}
    for service, own in (services or {}).items():
        for name, query in own.metrics.items():
            # a service's own template may name it literally instead of through $service
            found[f"{service}/{name}"] = _query_problems(query, needs_service=False)
        for name in sorted(own.not_measured - set(catalogue)):
            found[f"{service}/{name}"] = [f"not_measured names {name!r}, which the catalogue does not have"]
    return {path: problems for path, problems in found.items() if problems}


def _query_problems(query: MetricQuery, *, needs_service: bool = True) -> list[str]:
    """The template's problems, and its counts template's (named as such)."""
    counts = template_problems(query.counts, needs_service=needs_service) if query.counts.strip() else []
    return template_problems(query.promql, needs_service=needs_service) + [f"counts: {p}" for p in counts]
