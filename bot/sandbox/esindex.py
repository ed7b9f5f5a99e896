"""The sandbox's log documents and deploy events in Elasticsearch: `logs-sandbox` and `deploys`.

Two routes to the same indices: `ingest_elasticsearch` through the official client (any ES or
OpenSearch-compatible server, used by `opsbot sandbox up --es URL`), and `write_osmem_seed` for a folder
osmem-server loads at start (fast fixture start, no client needed).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch, helpers

from bot.sandbox.data import SandboxData, read_jsonl

log = logging.getLogger(__name__)

LOGS_INDEX = "logs-sandbox"
DEPLOYS_INDEX = "deploys"
_KEYWORD: dict[str, Any] = {"type": "keyword"}
_TEXT: dict[str, Any] = {"type": "text"}
MAPPINGS: dict[str, dict[str, Any]] = {
    LOGS_INDEX: {
        "properties": {
            "@timestamp": {"type": "date"},
            "service": _KEYWORD,
            "level": _KEYWORD,
            "logger": _KEYWORD,
            "host": _KEYWORD,
            "trace_id": _KEYWORD,
            "message": _TEXT,
            "stack_trace": _TEXT,
            # where a per-pod service's line came from (bot/sandbox/logdocs.py pins them)
            "pod": _KEYWORD,
            "node": _KEYWORD,
            "zone": _KEYWORD,
            "namespace": _KEYWORD,
            "version": _KEYWORD,
        }
    },
    DEPLOYS_INDEX: {
        "properties": {
            "@timestamp": {"type": "date"},
            "service": _KEYWORD,
            "version": _KEYWORD,
            "previous_version": _KEYWORD,
            "author": _KEYWORD,
            "commit": _KEYWORD,
            "summary": _TEXT,
            "diff": _TEXT,
        }
    },
}


def index_documents(data: SandboxData) -> dict[str, list[dict[str, Any]]]:
    """Index name -> its documents."""
    return {LOGS_INDEX: read_jsonl(data.logs_jsonl), DEPLOYS_INDEX: read_jsonl(data.deploys_jsonl)}


def ingest_elasticsearch(client: Elasticsearch, data: SandboxData) -> dict[str, int]:
    """Recreate both indices and bulk-load them; return the document count per index."""
    counts = {}
    for index, docs in index_documents(data).items():
        client.indices.delete(index=index, ignore_unavailable=True)
        client.indices.create(index=index, mappings=MAPPINGS[index])
        ok, errors = helpers.bulk(client, ({"_index": index, "_source": d} for d in docs), raise_on_error=False)
        if isinstance(errors, list) and errors:
            raise RuntimeError(f"bulk load into {index}: {len(errors)} documents failed, first: {errors[0]}")
        client.indices.refresh(index=index)
        counts[index] = ok
    log.info("loaded %s into Elasticsearch", counts)
    return counts


def write_osmem_seed(data: SandboxData, seed_dir: Path) -> Path:
    """Write osmem's seed layout (<index>.index.json + <index>.ndjson bulk body) and return the folder."""
    seed_dir.mkdir(parents=True, exist_ok=True)
    for index, docs in index_documents(data).items():
        (seed_dir / f"{index}.index.json").write_text(json.dumps({"mappings": MAPPINGS[index]}))
        with (seed_dir / f"{index}.ndjson").open("w", encoding="utf-8") as out:
            for doc in docs:
                out.write(json.dumps({"index": {"_index": index}}) + "\n" + json.dumps(doc, ensure_ascii=False) + "\n")
    return seed_dir
