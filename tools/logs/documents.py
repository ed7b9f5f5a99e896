"""A JSON log document read through the field mapping, the same mapping Elasticsearch reads: ECS `log.level` as a
nested object or as the dotted key ECS loggers write (`"log.level": "error"`), OpenTelemetry's `severity_text` and
`resource.service.name`, or plain `level`. The SQLite store ingests through here, and says per field how many
documents lacked it, naming the keys the documents do have, so a mapping that does not fit is never silent.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from tools.elastic import source_field
from tools.logs.model import LogEntry, LogFields, level_from_text
from tools.logs.shape.structured import flat_fields
from tools.timerange import moment_from_value

REQUIRED = ("timestamp", "service", "level", "message")  # without these a line cannot be searched as asked
MAX_KEYS = 200  # distinct keys remembered for did-you-mean


@dataclass
class IngestReport:
    """What one ingest read: lines stored and skipped, and per configured field how many documents lacked it."""

    fields: LogFields
    default_service: str = ""  # for documents without a service (a file per service)
    read: int = 0
    stored: int = 0
    skipped: int = 0  # not a JSON object, or no readable timestamp
    missing: Counter[str] = field(default_factory=Counter)  # LogFields attribute -> documents without it
    keys: Counter[str] = field(default_factory=Counter)  # every dotted key seen, for did-you-mean
    levels: Counter[str] = field(default_factory=Counter)  # raw level values as written
    services: Counter[str] = field(default_factory=Counter)

    def problems(self) -> list[str]:
        """One line per required field that some document lacked, with the closest keys the documents have."""
        lines = [self._missing_line(name) for name in self._required() if self.missing.get(name)]
        unknown = sorted(raw for raw in self.levels if level_from_text(raw) is None)
        if unknown:
            lines.append(f"level values that are no known level: {', '.join(repr(v) for v in unknown[:8])}")
        return lines

    def absent(self) -> list[str]:
        """The problem lines of required fields that no document had: loading such lines would be silently wrong."""
        return [self._missing_line(n) for n in self._required() if self.stored and self.missing.get(n) == self.stored]

    def _required(self) -> list[str]:
        return [name for name in REQUIRED if not (name == "service" and self.default_service)]

    def _missing_line(self, name: str) -> str:
        configured = getattr(self.fields, name)
        close = difflib.get_close_matches(configured, list(self.keys), n=2, cutoff=0.5)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        setting = "stack" if name == "stack_trace" else "trace" if name == "trace_id" else name
        lacking = self.missing.get(name, 0)
        return f"logs.{setting}_field = {configured!r}: missing in {lacking:,} of {self.stored:,} documents{hint}"


def entry_from_document(doc: dict[str, Any], fields: LogFields) -> LogEntry:
    """The LogEntry a document holds under `fields`; ValueError when it has no readable timestamp."""

    def text(name: str) -> str:
        value = source_field(doc, name)
        if isinstance(value, Mapping):  # OpenTelemetry's body may be {"text": ...} or a structured value
            value = value.get("text", json.dumps(value, ensure_ascii=False))
        return "" if value is None else str(value)

    stamp = source_field(doc, fields.timestamp)
    if stamp is None:
        raise ValueError(f"no {fields.timestamp!r}")
    raw_level = text(fields.level)
    return LogEntry(
        moment_from_value(stamp),
        text(fields.service),
        level_from_text(raw_level) or raw_level.upper(),
        text(fields.message),
        text(fields.logger),
        text(fields.host),
        text(fields.trace_id),
        text(fields.stack_trace),
        text(fields.error_type),
        text(fields.namespace),
        other_fields(doc, fields),
    )


def other_fields(doc: Mapping[str, Any], fields: LogFields) -> tuple[tuple[str, str], ...]:
    """The document's fields beyond the mapped ones (a pod, a zone, a version, a structured app's own fields)."""
    mapped = {getattr(fields, f.name) for f in dataclasses.fields(fields)}
    return tuple((k, v) for k, v in flat_fields(doc) if k not in mapped and k.removesuffix(".keyword") not in mapped)


def entries_from_lines(lines: Iterable[str], report: IngestReport) -> Iterator[LogEntry]:
    """The entries of JSON lines, counting into `report`; a line that does not parse is skipped, never fatal."""
    for line in lines:
        if not line.strip():
            continue
        report.read += 1
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            entry = entry_from_document(doc, report.fields)
        except (ValueError, TypeError, OverflowError):
            report.skipped += 1
            continue
        _count(doc, report)
        if not entry.service and report.default_service:
            entry = replace(entry, service=report.default_service)
        report.services[entry.service] += 1
        report.stored += 1
        yield entry


def dotted_keys(doc: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Every leaf's dotted path: `{"log": {"level": ...}}` and `{"log.level": ...}` both give `log.level`."""
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from dotted_keys(value, name + ".")
        else:
            yield name


def _count(doc: dict[str, Any], report: IngestReport) -> None:
    for spec in fields(report.fields):
        if source_field(doc, getattr(report.fields, spec.name)) in (None, ""):
            report.missing[spec.name] += 1
    level = source_field(doc, report.fields.level)
    if level not in (None, ""):
        report.levels[str(level)] += 1
    for key in dotted_keys(doc):
        if key in report.keys or len(report.keys) < MAX_KEYS:
            report.keys[key] += 1


def sample_report(lines: Iterable[str], fields: LogFields, default_service: str = "") -> IngestReport:
    """What ingesting `lines` would read, without storing anything (a look at a file's first lines)."""
    report = IngestReport(fields, default_service)
    for _ in entries_from_lines(lines, report):
        pass
    return report
