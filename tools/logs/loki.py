"""LokiLogs: the log tool over Grafana Loki's HTTP API, with LogQL built only from validated parameters.

The service is checked against the label values Loki holds, levels against LEVELS, and every search term
becomes a quoted, regex-escaped line filter, so no model input can become LogQL syntax. Counts by level come
from one `sum by (level) (count_over_time(...))` instant query; lines from `query_range`, newest first.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import requests

from tools.base import ToolError
from tools.elastic import source_field
from tools.logs.counting.logql import ns, phrase_filters, probe_counts, range_counts, usable
from tools.logs.documents import other_fields
from tools.logs.model import (
    Frame,
    KeyCounts,
    LogEntry,
    LogFields,
    LogQuery,
    LogResult,
    Prepare,
    Probe,
    SearchText,
    level_from_text,
    level_names,
)

MAX_RETRY_AFTER_S = 2.0  # a longer Retry-After is reported to the model instead of waited for


def logql_string(text: str) -> str:
    """A LogQL double-quoted string literal (Go strconv syntax, which JSON escaping satisfies)."""
    return json.dumps(text, ensure_ascii=False)


def line_filters(text: SearchText) -> str:
    """Case-insensitive line filters: one `|~` per term (all must match), or one alternation for OR."""
    patterns = [_term_pattern(t.text, prefix=t.prefix) for t in text.terms]
    if not patterns:
        return ""
    if text.any_of:
        return f" |~ {logql_string('(?i)(' + '|'.join(patterns) + ')')}"
    return "".join(f" |~ {logql_string('(?i)' + p)}" for p in patterns)


def field_filter(name: str, value: str) -> str:
    """A field inside the line: its name, then its value after any non-word run (`"status": 503`, `status=503`)."""
    pattern = r"(?i)\b" + re.escape(name) + r"\W+" + re.escape(value) + r"(\b|$)"
    return f" |~ {logql_string(pattern)}"


def _term_pattern(term: str, *, prefix: bool) -> str:
    words = [re.escape(w) for w in term.split()]
    return r"\b" + r"\s+".join(words) + ("" if prefix else r"\b")


class LokiLogs:
    """A LogSource over one Loki (or a multi-tenant gateway with `tenant`)."""

    def __init__(
        self,
        url: str,
        *,
        tenant: str = "",
        bearer_token: str = "",
        timeout_s: float = 10.0,
        service_label: str = "service",
        level_label: str = "level",
        fields: LogFields | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.fields = fields or LogFields()  # where a JSON line keeps the message, logger, stack and error type
        self.timeout_s = timeout_s
        self.service_label, self.level_label = service_label, level_label
        self._labels: list[str] | None = None  # the stream labels, read once (is the namespace one of them?)
        self.session = requests.Session()
        if tenant:
            self.session.headers["X-Scope-OrgID"] = tenant
        if bearer_token:
            self.session.headers["Authorization"] = f"Bearer {bearer_token}"

    def describe(self) -> str:
        """Where the logs come from."""
        return f"Loki at {self.url}"

    def check(self) -> str:
        """/ready, then the service label's values: the address, the tenant and the label name in one go."""
        self._get("/ready", {}, "checking readiness", json_reply=False)
        services = self.services()
        return f"ready at {self.url}; {len(services)} services under label {self.service_label!r}"

    def services(self) -> list[str]:
        """Every value of the service label."""
        return self.label_values(self.service_label, "listing services")

    def labels(self) -> list[str]:
        """Every stream label name (discovery and checks read which labels name the service and the level)."""
        return sorted(str(v) for v in self._get("/loki/api/v1/labels", {}, "listing labels").get("data") or [])

    def label_values(self, label: str, what: str = "") -> list[str]:
        """Every value of one stream label (a name from labels(), never model input)."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", label):
            raise ToolError(f"{label!r} is not a Loki label name")
        reply = self._get(f"/loki/api/v1/label/{label}/values", {}, what or f"listing {label} values")
        return sorted(str(v) for v in reply.get("data") or [])

    def newest_lines(self, label: str, start: datetime, end: datetime, limit: int) -> list[tuple[dict[str, str], str]]:
        """The newest raw lines of every stream that has `label`, with their labels (for discovery)."""
        params = {"query": f'{{{label}=~".+"}}', "start": ns(start), "end": ns(end), "limit": limit}
        reply = self._get("/loki/api/v1/query_range", params, "sampling lines")
        return [
            (dict(stream.get("stream", {})), line)
            for stream in reply.get("data", {}).get("result", [])
            for _, line in stream.get("values", [])
        ][:limit]

    def search(self, query: LogQuery) -> LogResult:
        """Counts by level (one instant query), the newest lines and a sample at the cluster levels."""
        filters = self._filters(query)
        counts = self._counts(self._selector(query, ()) + filters, query)
        entries = self._lines(query, query.levels, query.limit, filters)
        cluster = self._lines(query, query.cluster_levels, query.cluster_sample, filters)
        oldest = self._lines(query, query.cluster_levels, query.oldest_sample, filters, forward=True)
        total = sum(n for lv, n in counts.items() if not query.levels or lv in query.levels)
        cluster_total = sum(n for lv, n in counts.items() if lv in query.cluster_levels)
        return LogResult(counts, total, entries, cluster_total, cluster, cluster_oldest=oldest)

    def histogram(self, query: LogQuery, frame: Frame) -> dict[str, tuple[int, ...]]:
        """Lines per bucket by level: one range query of count_over_time per bucket."""
        log_query = self._selector(query, ()) + self._filters(query)
        rows = range_counts(self, log_query, self.level_label, frame, "counting lines per bucket")
        found: dict[str, list[int]] = {}
        for raw, row in rows.items():
            level = level_from_text(raw) or raw.upper() or "UNKNOWN"
            merged = found.setdefault(level, [0] * frame.count)
            found[level] = [a + b for a, b in zip(merged, row, strict=True)]
        return {level: tuple(row) for level, row in found.items()}

    def count_keys(
        self, query: LogQuery, probes: Sequence[Probe], frame: Frame, prepare: Prepare | None = None
    ) -> KeyCounts:
        """Each probe's count, first/last line and buckets, matched by line filters on its phrases."""
        base = self._selector(query, query.cluster_levels) + self._filters(query)
        queries = {p.key: base + phrase_filters(p, logql_string) for p in usable(probes)}
        counts = probe_counts(self, queries, query.start, query.end, frame, self.level_label)
        return KeyCounts(counts, exact=False)

    def get(self, path: str, params: dict[str, Any], what: str) -> Any:
        """One GET of Loki's JSON API (the counting queries use it)."""
        return self._get(path, params, what)

    def _filters(self, query: LogQuery) -> str:
        """The search terms, the trace id, the field filters and (when no stream label holds it) the namespace."""
        filters = line_filters(query.text)
        if query.trace_id:
            filters += f" |= {logql_string(query.trace_id)}"
        if query.namespace and not self._namespace_label():
            filters += field_filter(self.fields.namespace, query.namespace)
        return filters + "".join(field_filter(name, value) for name, value in query.where)

    def _namespace_label(self) -> str:
        """The stream label that holds the namespace (named like the namespace field), or ""."""
        if self._labels is None:
            try:
                self._labels = self.labels()
            except ToolError:
                self._labels = []
        return self.fields.namespace if self.fields.namespace in self._labels else ""

    def _selector(self, query: LogQuery, levels: tuple[str, ...]) -> str:
        service = query.service
        matchers = [
            f"{self.service_label}={logql_string(service)}" if service is not None else f'{self.service_label}=~".+"'
        ]
        if query.namespace and (label := self._namespace_label()):
            matchers.append(f"{label}={logql_string(query.namespace)}")
        if levels:  # levels come from LEVELS only; (?i) matches any case, and every alias (warning, err) is listed
            names = "|".join(name for level in levels for name in level_names(level))
            matchers.append(f"{self.level_label}=~{logql_string('(?i)(' + names + ')')}")
        return "{" + ", ".join(matchers) + "}"

    def _counts(self, log_query: str, query: LogQuery) -> dict[str, int]:
        seconds = max(1, int((query.end - query.start).total_seconds()))
        logql = f"sum by ({self.level_label}) (count_over_time({log_query} [{seconds}s]))"
        reply = self._get("/loki/api/v1/query", {"query": logql, "time": ns(query.end) - 1}, "counting log lines")
        counts: dict[str, int] = {}
        for sample in reply.get("data", {}).get("result", []):
            raw = str(sample.get("metric", {}).get(self.level_label, ""))
            level = level_from_text(raw) or raw.upper() or "UNKNOWN"
            counts[level] = counts.get(level, 0) + int(float(sample["value"][1]))
        return counts

    def _lines(
        self, query: LogQuery, levels: tuple[str, ...], limit: int, filters: str, *, forward: bool = False
    ) -> tuple[LogEntry, ...]:
        """The newest (or, `forward`, the oldest) lines, merged across streams (pods) in time order."""
        if limit <= 0:
            return ()
        params = {
            "query": self._selector(query, levels) + filters,
            "start": ns(query.start),
            "end": ns(query.end) - 1,
            "limit": limit,
            "direction": "forward" if forward else "backward",
        }
        reply = self._get("/loki/api/v1/query_range", params, "reading log lines")
        entries = [
            self._entry(stream.get("stream", {}), ts, line)
            for stream in reply.get("data", {}).get("result", [])
            for ts, line in stream.get("values", [])
        ]
        entries.sort(key=lambda e: e.timestamp, reverse=not forward)
        return tuple(entries[:limit])

    def _entry(self, labels: dict[str, str], ts_ns: str, line: str) -> LogEntry:
        doc, f = _json_object(line), self.fields

        def text(name: str) -> str:
            value = source_field(doc, name)
            return "" if value is None else str(value)

        raw_level = str(labels.get(self.level_label) or text(f.level))
        extra = {k: v for k, v in labels.items() if k not in (self.service_label, self.level_label, f.namespace)}
        return LogEntry(
            datetime.fromtimestamp(int(ts_ns) / 1e9, tz=UTC),
            str(labels.get(self.service_label, "")),
            level_from_text(raw_level) or raw_level.upper(),
            text(f.message) if doc else line,
            text(f.logger),
            str(labels.get("host") or text(f.host)),
            text(f.trace_id),
            text(f.stack_trace),
            text(f.error_type),
            str(labels.get(f.namespace) or text(f.namespace)),
            tuple(extra.items()) + (other_fields(doc, f) if doc else ()),
        )

    def _get(self, path: str, params: dict[str, Any], what: str, *, json_reply: bool = True) -> Any:
        """One GET; a short 429 Retry-After is honoured once; any other failure is a ToolError with Loki's text."""
        for attempt in (1, 2):
            try:
                reply = self.session.get(self.url + path, params=params, timeout=self.timeout_s)
            except requests.RequestException as exc:
                raise ToolError(f"Loki unreachable while {what}: {type(exc).__name__}: {exc}") from exc
            wait = _retry_after_s(reply)
            if reply.status_code == 429 and attempt == 1 and wait is not None and wait <= MAX_RETRY_AFTER_S:
                time.sleep(wait)
                continue
            if reply.status_code != 200:
                hint = f"; Retry-After {reply.headers['Retry-After']} s" if "Retry-After" in reply.headers else ""
                raise ToolError(f"Loki answered {reply.status_code} while {what}: {reply.text.strip()[:300]}{hint}")
            return reply.json() if json_reply else reply.text
        raise AssertionError("unreachable")


def _retry_after_s(reply: requests.Response) -> float | None:
    value = reply.headers.get("Retry-After", "")
    return float(value) if value.replace(".", "", 1).isdigit() else None


def _json_object(line: str) -> dict[str, Any]:
    if not line.startswith("{"):
        return {}
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
