"""A stack's log documents as each log convention stores them in Elasticsearch, with the index mappings.

The lines themselves (background and the scenario's patterns) come from bot/sandbox/logdocs.py; each convention
here reshapes them:
- ECS (ecs-logging-java behind Filebeat): `log.level` in lower case, `service.name`, `message`, `error.type`,
  `error.stack_trace`, `log.logger`, `host.name`, `trace.id`, in daily indices `logs-<service>-YYYY.MM.DD`;
- the OpenTelemetry log model (the collector's Elasticsearch exporter): `severity_text`, `severity_number`,
  `body`, `resource.service.name`, `attributes.exception.type`, in one index named like a data stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

Doc = dict[str, Any]
_KEYWORD: dict[str, Any] = {"type": "keyword"}
_TEXT: dict[str, Any] = {"type": "text"}
_TEXT_WITH_KEYWORD: dict[str, Any] = {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}
_SEVERITY = {"ERROR": 17, "WARN": 13, "INFO": 9, "DEBUG": 5}

ECS_MAPPING: dict[str, Any] = {
    "properties": {
        "@timestamp": {"type": "date"},
        "message": _TEXT,
        "log": {"properties": {"level": _KEYWORD, "logger": _KEYWORD}},
        "service": {"properties": {"name": _KEYWORD, "environment": _KEYWORD}},
        "error": {"properties": {"type": _KEYWORD, "message": _TEXT, "stack_trace": _TEXT}},
        "host": {"properties": {"name": _KEYWORD}},
        "trace": {"properties": {"id": _KEYWORD}},
        "ecs": {"properties": {"version": _KEYWORD}},
    }
}
OTEL_MAPPING: dict[str, Any] = {
    "properties": {
        "@timestamp": {"type": "date"},
        "body": _TEXT,
        "severity_text": _TEXT_WITH_KEYWORD,
        "severity_number": {"type": "integer"},
        "trace_id": _KEYWORD,
        "resource": {"properties": {"service": {"properties": {"name": _KEYWORD, "namespace": _KEYWORD}}}},
        "attributes": {
            "properties": {
                "exception": {"properties": {"type": _KEYWORD, "stacktrace": _TEXT}},
                "code": {"properties": {"namespace": _KEYWORD}},
            }
        },
    }
}


def error_type(stack_trace: str) -> str:
    """The exception class a stack trace starts with ("" when it names none)."""
    first = stack_trace.strip().splitlines()[0] if stack_trace.strip() else ""
    head = first.split(":", 1)[0].strip()
    return head if "." in head and " " not in head else ""


def ecs_doc(doc: Doc) -> tuple[str, Doc]:
    """(index, document) of one sandbox line in ECS."""
    out: Doc = {
        "@timestamp": doc["@timestamp"],
        "message": doc["message"],
        "log": {"level": doc["level"].lower(), "logger": doc["logger"]},
        "service": {"name": doc["service"], "environment": "prod"},
        "host": {"name": doc["host"]},
        "trace": {"id": doc["trace_id"]},
        "ecs": {"version": "8.11"},
    }
    if doc.get("stack_trace"):
        out["error"] = {"type": error_type(doc["stack_trace"]), "stack_trace": doc["stack_trace"]}
    day = doc["@timestamp"][:10].replace("-", ".")
    return f"logs-{doc['service']}-{day}", out


def otel_doc(doc: Doc) -> tuple[str, Doc]:
    """(index, document) of one sandbox line in the OpenTelemetry log model."""
    attributes: Doc = {"code": {"namespace": doc["logger"]}}
    if doc.get("stack_trace"):
        attributes["exception"] = {"type": error_type(doc["stack_trace"]), "stacktrace": doc["stack_trace"]}
    out: Doc = {
        "@timestamp": doc["@timestamp"],
        "body": doc["message"],
        "severity_text": doc["level"],
        "severity_number": _SEVERITY[doc["level"]],
        "trace_id": doc["trace_id"],
        "resource": {"service": {"name": doc["service"], "namespace": "shop"}},
        "attributes": attributes,
    }
    return "logs-otel.shop-default", out


CONVENTIONS: dict[str, tuple[Callable[[Doc], tuple[str, Doc]], dict[str, Any]]] = {
    "ecs": (ecs_doc, ECS_MAPPING),
    "otel": (otel_doc, OTEL_MAPPING),
}


def indexed(docs: list[Doc], convention: str) -> dict[str, list[Doc]]:
    """Index name -> its documents, in time order."""
    reshape, _ = CONVENTIONS[convention]
    out: dict[str, list[Doc]] = {}
    for doc in docs:
        index, shaped = reshape(doc)
        out.setdefault(index, []).append(shaped)
    return out


def write_seed(indices: Mapping[str, list[Doc]], mappings: Mapping[str, dict[str, Any]], seed_dir: Path) -> Path:
    """osmem-server's seed folder: <index>.index.json (its mapping) and <index>.ndjson (a bulk body)."""
    seed_dir.mkdir(parents=True, exist_ok=True)
    for index, docs in indices.items():
        (seed_dir / f"{index}.index.json").write_text(json.dumps({"mappings": mappings[index]}))
        with (seed_dir / f"{index}.ndjson").open("w", encoding="utf-8") as out:
            for doc in docs:
                out.write(json.dumps({"index": {"_index": index}}) + "\n" + json.dumps(doc, ensure_ascii=False) + "\n")
    return seed_dir
