"""FakeLoki: a Grafana Loki stand-in over real HTTP, speaking Loki's JSON and a real subset of LogQL.

Endpoints: /ready, /loki/api/v1/labels, /loki/api/v1/label/<name>/values, /loki/api/v1/query_range (log queries ->
"streams"; `sum [by (<label>)] (count_over_time(<log query> [<n>s]))` -> "matrix", a point per step) and
/loki/api/v1/query (the same metric query -> "vector"). The LogQL it understands: a stream selector with `=`, `!=`,
`=~`, `!~` matchers (RE2-style anchored regexes) and line filters `|=`, `!=`, `|~`, `!~` with double-quoted strings;
anything else is a 400 "parse error", as Loki answers. Lines are stored the way a JSON-logging app ships them (the
document minus its labels). Faults: `fail(status, body, retry_after=...)`, `delay_s`, and a tenant that must be sent
as X-Scope-OrgID. The tests run it in-process; `opsbot sandbox up --loki` serves a scenario's logs with it
(bot/sandbox/standins/launch.py).
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.sandbox.standins.server import HttpStandIn, Reply

LABELS = ("service", "level", "host", "namespace", "pod", "node")  # as promtail labels a Kubernetes stream
_STRING = r'"(?:[^"\\]|\\.)*"'
_MATCHER = re.compile(rf"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*({_STRING})\s*(?:,|$)")
_FILTER = re.compile(rf"\s*(\|=|!=|\|~|!~)\s*({_STRING})")
_METRIC = re.compile(
    r"^\s*sum\s*(?:by\s*\(\s*([A-Za-z_]\w*)\s*\)\s*)?\(\s*count_over_time\s*\((.*)\[(\d+)s\]\s*\)\s*\)\s*$", re.S
)


class LogQLError(ValueError):
    pass


@dataclass(frozen=True)
class Line:
    ts_ns: int
    labels: tuple[tuple[str, str], ...]
    text: str


def lines_from_jsonl(path: Path) -> list[Line]:
    """One Loki line per JSON log document: service, level, host (and a pinned line's namespace, pod and node)
    become labels, the rest the line."""
    out = []
    for raw in path.read_text().splitlines():
        if not raw.strip():
            continue
        doc = json.loads(raw)
        moment = datetime.fromisoformat(str(doc.pop("@timestamp")).replace("Z", "+00:00"))
        labels = tuple((k, str(doc.pop(k))) for k in LABELS if doc.get(k) not in (None, ""))
        out.append(Line(int(moment.timestamp() * 1e9), labels, json.dumps(doc, ensure_ascii=False)))
    return out


def _selector(text: str) -> tuple[list[tuple[str, str, str]], str]:
    if not text.startswith("{") or "}" not in text:
        raise LogQLError("parse error : syntax error: unexpected IDENTIFIER, expecting {")
    inner, rest = text[1:].split("}", 1)
    matchers, pos = [], 0
    while pos < len(inner):
        m = _MATCHER.match(inner, pos)
        if not m:
            raise LogQLError(f"parse error at line 1, col {pos + 2}: syntax error in stream selector")
        matchers.append((m.group(1), m.group(2), json.loads(m.group(3))))
        pos = m.end()
    if not any(
        op in ("=", "=~") and re.fullmatch(v if op == "=~" else re.escape(v), "") is None for _, op, v in matchers
    ):
        raise LogQLError(
            "parse error : queries require at least one regexp or equality matcher that does not "
            "have an empty-compatible value"
        )
    return matchers, rest


def _filters(text: str) -> list[tuple[str, str]]:
    found, pos = [], 0
    while pos < len(text.strip()):
        m = _FILTER.match(text, pos)
        if not m:
            raise LogQLError(f"parse error at line 1, col {pos + 1}: syntax error, unexpected {text[pos : pos + 8]!r}")
        found.append((m.group(1), json.loads(m.group(2))))
        pos = m.end()
    return found


def _go_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _label_ok(labels: dict[str, str], matcher: tuple[str, str, str]) -> bool:
    name, op, value = matcher
    have = labels.get(name, "")
    if op == "=":
        return have == value
    if op == "!=":
        return have != value
    hit = _go_regex(value).fullmatch(have) is not None
    return hit if op == "=~" else not hit


def _line_ok(text: str, filt: tuple[str, str]) -> bool:
    op, value = filt
    if op == "|=":
        return value in text
    if op == "!=":
        return value not in text
    hit = _go_regex(value).search(text) is not None
    return hit if op == "|~" else not hit


@dataclass
class FakeLoki(HttpStandIn):
    lines: list[Line] = field(default_factory=list)
    tenant: str = ""
    delay_s: float = 0.0
    requests: list[str] = field(default_factory=list)
    port: int = 0  # 0: a free port

    thread_name = "fake-loki"

    def __post_init__(self) -> None:
        self._failures: list[tuple[int, str, int | None]] = []
        self.serve(self.port)

    def reply(self, path: str, headers: Mapping[str, str]) -> Reply:
        url = urllib.parse.urlsplit(path)
        params = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        status, body, extra = self.answer(url.path, params, headers.get("x-scope-orgid", ""))
        return Reply(status, body, extra)

    def fail(self, status: int, body: str, *, times: int = 1, retry_after: int | None = None) -> None:
        self._failures += [(status, body, retry_after)] * times

    def select(self, logql: str, start_ns: int, end_ns: int) -> list[Line]:
        """The lines a log query selects in [start, end]."""
        matchers, rest = _selector(logql.strip())
        filters = _filters(rest)
        return [
            line
            for line in self.lines
            if start_ns <= line.ts_ns <= end_ns
            and all(_label_ok(dict(line.labels), m) for m in matchers)
            and all(_line_ok(line.text, f) for f in filters)
        ]

    def answer(self, path: str, params: dict[str, str], tenant: str) -> tuple[int, Any, dict[str, str]]:
        self.requests.append(f"{path} {params.get('query', '')}")
        if self.delay_s:
            time.sleep(self.delay_s)
        if self._failures:
            status, body, retry = self._failures.pop(0)
            return status, body, {"Retry-After": str(retry)} if retry else {}
        if path == "/ready":
            return 200, "ready", {}
        if self.tenant and tenant != self.tenant:
            return 401, "no org id", {}
        try:
            return 200, self._api(path, params), {}
        except LogQLError as exc:
            return 400, str(exc), {}

    def _api(self, path: str, params: dict[str, str]) -> Any:
        if path == "/loki/api/v1/labels":
            return _success(sorted({k for line in self.lines for k, _ in line.labels}))
        if path.startswith("/loki/api/v1/label/") and path.endswith("/values"):
            name = path.split("/")[-2]
            return _success(sorted({v for line in self.lines for k, v in line.labels if k == name}))
        if path == "/loki/api/v1/query_range":
            return self._query_range(params)
        if path == "/loki/api/v1/query":
            return self._instant(params)
        raise LogQLError(f"404 page not found: {path}")

    def _query_range(self, params: dict[str, str]) -> dict[str, Any]:
        if _METRIC.match(params["query"]):
            return self._matrix(params)
        found = self.select(params["query"], int(params["start"]), int(params["end"]))
        found.sort(key=lambda line: line.ts_ns, reverse=params.get("direction", "backward") == "backward")
        found = found[: int(params.get("limit", "100"))]
        streams: dict[tuple[tuple[str, str], ...], list[list[str]]] = {}
        for line in found:
            streams.setdefault(line.labels, []).append([str(line.ts_ns), line.text])
        result = [{"stream": dict(labels), "values": values} for labels, values in streams.items()]
        return {"status": "success", "data": {"resultType": "streams", "result": result, "stats": {}}}

    def _instant(self, params: dict[str, str]) -> dict[str, Any]:
        label, log_query, seconds = _metric(params["query"])
        end_ns = int(params["time"])
        counts = self._counted(log_query, label, end_ns - seconds * 1_000_000_000 + 1, end_ns)
        at = end_ns / 1e9
        result = [{"metric": {label: k} if k else {}, "value": [at, str(n)]} for k, n in sorted(counts.items())]
        return {"status": "success", "data": {"resultType": "vector", "result": result, "stats": {}}}

    def _matrix(self, params: dict[str, str]) -> dict[str, Any]:
        """A range metric query: the instant query at start, start + step, ... end; points with no line left out."""
        label, log_query, seconds = _metric(params["query"])
        step_ns = int(float(params["step"].rstrip("s")) * 1e9)
        series: dict[str, list[list[Any]]] = {}
        at = int(params["start"])
        while at <= int(params["end"]):
            for key, n in self._counted(log_query, label, at - seconds * 1_000_000_000 + 1, at).items():
                series.setdefault(key, []).append([at / 1e9, str(n)])
            at += step_ns
        result = [{"metric": {label: k} if k else {}, "values": v} for k, v in sorted(series.items())]
        return {"status": "success", "data": {"resultType": "matrix", "result": result, "stats": {}}}

    def _counted(self, log_query: str, label: str, start_ns: int, end_ns: int) -> dict[str, int]:
        counts: dict[str, int] = {}
        for line in self.select(log_query, start_ns, end_ns):
            key = dict(line.labels).get(label, "") if label else ""
            counts[key] = counts.get(key, 0) + 1
        return counts


def _metric(query: str) -> tuple[str, str, int]:
    m = _METRIC.match(query)
    if not m:
        raise LogQLError("parse error : this stand-in answers only sum [by (<label>)] (count_over_time(...[<n>s]))")
    return m.group(1) or "", m.group(2), int(m.group(3))


def _success(data: Iterable[str]) -> dict[str, Any]:
    return {"status": "success", "data": list(data)}
