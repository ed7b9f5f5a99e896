"""ElasticsearchDeploys: deploy records from a deploy-events index (one document per deploy).

Documents carry `@timestamp`, `service`, `version`, `previous_version`, `author`, `commit`, `summary` and
`diff` (the unified diff of the service's folder), with service and version as keyword fields.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from elasticsearch import Elasticsearch

from tools.deploys import DeployDiff, DeployRecord, files_from_diff
from tools.esrequest import es_request
from tools.timerange import iso_z

MAX_HITS = 200


class ElasticsearchDeploys:
    """A DeploySource over one index."""

    def __init__(self, client: Elasticsearch, index: str = "deploys") -> None:
        self.client = client
        self.index = index

    def describe(self) -> str:
        """Where the deploy records come from."""
        return f"Elasticsearch index {self.index}"

    def services(self) -> list[str]:
        """Every service with a deploy event."""
        aggs = {"services": {"terms": {"field": "service", "size": 1000}}}
        reply = es_request("listing services", lambda: self.client.search(index=self.index, size=0, aggs=aggs))
        return sorted(b["key"] for b in reply.get("aggregations", {}).get("services", {}).get("buckets", []))

    def records(self, service: str | None, start: datetime, end: datetime) -> list[DeployRecord]:
        """Deploy events in [start, end), newest first."""
        filters: list[dict[str, Any]] = [{"range": {"@timestamp": {"gte": iso_z(start), "lt": iso_z(end)}}}]
        if service is not None:
            filters.append({"term": {"service": service}})
        return [_record(h["_source"]) for h in self._hits({"bool": {"filter": filters}}, MAX_HITS)]

    def versions(self, service: str) -> list[str]:
        """The service's versions, newest first."""
        hits = self._hits({"term": {"service": service}}, MAX_HITS, source=["version"])
        return list(dict.fromkeys(str(h["_source"].get("version", "")) for h in hits))

    def diff(self, service: str, version: str) -> DeployDiff | None:
        """The stored diff of one deploy event."""
        query = {"bool": {"filter": [{"term": {"service": service}}, {"term": {"version": version}}]}}
        hits = self._hits(query, 1)
        if not hits:
            return None
        source = hits[0]["_source"]
        return DeployDiff(_record(source), str(source.get("diff") or ""))

    def _hits(self, query: dict[str, Any], size: int, source: list[str] | None = None) -> list[dict[str, Any]]:
        reply = es_request(
            "reading deploy records",
            lambda: self.client.search(
                index=self.index,
                query=query,
                size=size,
                sort=[{"@timestamp": {"order": "desc"}}],
                source_includes=source,
            ),
        )
        return list(reply["hits"]["hits"])


def _record(source: dict[str, Any]) -> DeployRecord:
    moment = datetime.fromisoformat(str(source["@timestamp"]))
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return DeployRecord(
        service=str(source.get("service", "")),
        version=str(source.get("version", "")),
        at=moment,
        author=str(source.get("author", "")),
        summary=str(source.get("summary", "")),
        commit=str(source.get("commit", "")),
        previous_version=str(source.get("previous_version", "") or ""),
        files=files_from_diff(str(source.get("diff") or "")),
    )
