"""ElasticsearchTraceStore: traces in an index with an explicit mapping, plus feedback and eval-run indices.

The full trace rides along as a non-indexed `doc` object; the flat fields beside it are what queries and
aggregations use. The mapping is `strict`, so a field nobody declared is an error, not a silent new column.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from bot.engine.types import Step, Trace, trace_from_dict, trace_to_dict
from bot.safety.redact import redact_trace
from bot.store.analytics import MAX_DURATIONS, elastic_stats_query, since_query, stats_from_elastic
from bot.store.base import (
    EvalRunList,
    TraceList,
    TraceRedactor,
    TraceStats,
    check_vote,
    is_partial,
    iso_utc,
    observations_of,
    partial_after,
    started_at_of,
    tool_calls_of,
    with_voted_intent,
)

log = logging.getLogger(__name__)

MAPPING_VERSION = 1
Sorts = list[Any]  # a module-level alias: inside the class, `list` names the method
_KEYWORD, _TEXT, _LONG, _DATE = ({"type": t} for t in ("keyword", "text", "long", "date"))

TRACE_MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "_meta": {"opsbot_mapping_version": MAPPING_VERSION},
    "properties": {
        "trace_id": _KEYWORD,
        "started_at": _DATE,
        "question": _TEXT,
        "answer": _TEXT,
        "observations": _TEXT,
        "protocol": _KEYWORD,
        "stop_reason": _KEYWORD,
        "complete": {"type": "boolean"},
        "intent": _KEYWORD,
        "model": _KEYWORD,
        "steps": {"type": "integer"},
        "prompt_tokens": _LONG,
        "completion_tokens": _LONG,
        "tokens": _LONG,
        "elapsed_ms": _LONG,
        "calls": {"type": "nested", "properties": {"step": {"type": "integer"}, "tool": _KEYWORD, "status": _KEYWORD}},
        "doc": {"type": "object", "enabled": False},
    },
}
FEEDBACK_MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "trace_id": _KEYWORD,
        "user": _KEYWORD,
        "vote": {"type": "integer"},
        "at": _DATE,
        # the intent gate's choice when the vote was cast (added later: put into older indices on start)
        "routed_as": _KEYWORD,
        "tier": _KEYWORD,
        "probability": {"type": "float"},
    },
}
EVAL_MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {"run_id": _KEYWORD, "at": _DATE, "doc": {"type": "object", "enabled": False}},
}


def trace_to_document(trace: Trace) -> dict[str, Any]:
    """The indexed form of one (already redacted) trace."""
    t = trace.totals
    return {
        "trace_id": trace.trace_id,
        "started_at": iso_utc(started_at_of(trace)),
        "question": trace.question,
        "answer": trace.answer,
        "observations": observations_of(trace),
        "protocol": trace.protocol,
        "stop_reason": trace.stop_reason.value,
        "complete": trace.complete,
        "intent": trace.intent.route if trace.intent else None,
        "model": trace.model,
        "steps": len(trace.steps),
        "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens,
        "tokens": t.tokens,
        "elapsed_ms": t.elapsed_ms,
        "calls": [{"step": c.step, "tool": c.tool, "status": c.status} for c in tool_calls_of(trace)],
        "doc": trace_to_dict(trace),
    }


class ElasticsearchTraceStore:
    """Traces in `index`, votes in `<index>-feedback`, eval runs in `<index>-evals`; created when missing."""

    def __init__(self, client: Elasticsearch, index: str, *, redact: TraceRedactor = redact_trace) -> None:
        self._es = client
        self.index = index
        self._feedback = f"{index}-feedback"
        self._evals = f"{index}-evals"
        self._redact = redact
        for name, mapping in ((index, TRACE_MAPPING), (self._feedback, FEEDBACK_MAPPING), (self._evals, EVAL_MAPPING)):
            self._ensure_index(name, mapping)

    def _ensure_index(self, name: str, mapping: dict[str, Any]) -> None:
        if not self._es.indices.exists(index=name):
            # Another replica may create it at the same moment: "already exists" is success.
            self._es.options(ignore_status=400).indices.create(index=name, mappings=mapping)
            log.info("created index %s", name)
        elif name == self._feedback:  # adding fields to a strict mapping is allowed; an older index gains them
            self._es.indices.put_mapping(index=name, properties=mapping["properties"])

    def save(self, trace: Trace) -> None:
        """Index (or replace) one trace, redacted; visible to search when this returns."""
        self._write(self._redact(trace))

    def _write(self, trace: Trace) -> None:
        self._es.index(index=self.index, id=trace.trace_id, document=trace_to_document(trace), refresh="wait_for")

    def append_step(self, trace_id: str, question: str, step: Step | None = None) -> None:
        """Index the partial trace with one more step (one worker owns a running trace)."""
        existing = self.get(trace_id)
        if existing is not None and not is_partial(existing):
            return  # the final trace is already indexed
        self._write(partial_after(existing, trace_id, question, step, self._redact))

    def delete_older_than(self, cutoff: datetime) -> int:
        resp = self._es.delete_by_query(
            index=self.index,
            query={"range": {"started_at": {"lt": iso_utc(cutoff)}}},
            refresh=True,
            conflicts="proceed",
        )
        return int(resp.get("deleted", 0))

    def get(self, trace_id: str) -> Trace | None:
        try:
            hit = self._es.get(index=self.index, id=trace_id, source_includes=["doc"])
        except NotFoundError:
            return None
        return trace_from_dict(hit["_source"]["doc"])

    def list(self, limit: int = 20, *, min_steps: int = 0, since: datetime | None = None) -> TraceList:
        """Newest first; `min_steps` keeps runs with at least that many steps."""
        filters = [since_query(since, "started_at"), {"range": {"steps": {"gte": min_steps}}}]
        return self._traces({"bool": {"filter": filters}}, limit, sort=[{"started_at": "desc"}])

    def search(self, text: str, limit: int = 20) -> TraceList:
        """Full-text search over question, answer and observations, best match first."""
        if not text.strip():
            return []
        query = {"multi_match": {"query": text, "fields": ["question^2", "answer", "observations"], "operator": "and"}}
        return self._traces(query, limit)

    def _traces(self, query: dict[str, Any], limit: int, sort: Sorts | None = None) -> TraceList:
        resp = self._es.search(index=self.index, query=query, size=limit, sort=sort, source_includes=["doc"])
        return [trace_from_dict(h["_source"]["doc"]) for h in resp["hits"]["hits"]]

    def record_feedback(self, trace_id: str, user: str, vote: int) -> None:
        """One vote per user and trace (the document id), so a second vote replaces the first."""
        doc: dict[str, Any] = {
            "trace_id": trace_id,
            "user": user,
            "vote": check_vote(vote),
            "at": iso_utc(datetime.now(UTC)),
        }
        intent = (trace := self.get(trace_id)) and trace.intent
        if intent:  # the gate's choice as it is now: the 👎 stays a labelled example whatever happens to the trace
            doc |= {"routed_as": intent.route, "tier": intent.tier, "probability": intent.confidence}
        self._es.index(index=self._feedback, id=f"{trace_id}:{user}", document=doc, refresh="wait_for")

    def downvoted(self, limit: int = 500, *, since: datetime | None = None) -> TraceList:
        """Traces with a 👎 since `since`, most recent vote first (votes are read first, then their traces)."""
        query = {"bool": {"filter": [{"term": {"vote": -1}}, since_query(since, "at")]}}
        votes = self._es.search(
            index=self._feedback,
            query=query,
            size=limit * 4,
            sort=[{"at": "desc"}],
            source_includes=["trace_id", "routed_as", "tier", "probability"],
        )["hits"]["hits"]
        latest: dict[str, dict[str, Any]] = {}
        for hit in votes:  # newest first: the first vote seen per trace is its latest
            latest.setdefault(hit["_source"]["trace_id"], hit["_source"])
        ids = list(latest)[:limit]
        if not ids:
            return []
        found = {t.trace_id: t for t in self._traces({"terms": {"trace_id": ids}}, len(ids))}
        return [
            with_voted_intent(found[i], latest[i].get("routed_as"), latest[i].get("tier"), latest[i].get("probability"))
            for i in ids
            if i in found
        ]

    def stats(self, *, since: datetime | None = None, long_run_steps: int = 6) -> TraceStats:
        body = self._es.search(index=self.index, **elastic_stats_query(since, long_run_steps)).body
        durations = self._es.search(
            index=self.index,
            query=since_query(since, "started_at"),
            size=MAX_DURATIONS,
            source_includes=["elapsed_ms"],
            sort=[{"elapsed_ms": "asc"}],
        )["hits"]["hits"]
        votes = self._es.search(
            index=self._feedback,
            size=0,
            query=since_query(since, "at"),
            aggs={"up": {"filter": {"term": {"vote": 1}}}, "down": {"filter": {"term": {"vote": -1}}}},
        )["aggregations"]
        return stats_from_elastic(
            body,
            [int(h["_source"]["elapsed_ms"]) for h in durations],
            (votes["up"]["doc_count"], votes["down"]["doc_count"]),
            long_run_steps,
        )

    def save_eval_run(self, run: Mapping[str, Any]) -> str:
        run_id = str(run.get("run_id") or uuid.uuid4().hex[:12])
        at = iso_utc(datetime.now(UTC))
        doc = {"run_id": run_id, "at": at, **run}
        self._es.index(index=self._evals, id=run_id, document={"run_id": run_id, "at": at, "doc": doc}, refresh=True)
        return run_id

    def eval_runs(self, limit: int = 20) -> EvalRunList:
        resp = self._es.search(index=self._evals, size=limit, sort=[{"at": "desc"}], source_includes=["doc"])
        return [dict(h["_source"]["doc"]) for h in resp["hits"]["hits"]]

    def close(self) -> None:
        self._es.close()
