"""ElasticsearchDeploys: deploy records from a deploy-events index (one document per deploy).

By default documents carry `@timestamp`, `service`, `version`, `previous_version`, `author`, `commit`, `summary`
and `diff` (the unified diff of the service's folder), with service and version as keyword fields; DeployFields
names other fields when an index uses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tools.base import ToolError
from tools.deploys.query import files_from_diff
from tools.deploys.records import DeployDiff, DeployRecord
from tools.elastic import es_request, field_values, source_field
from tools.timerange import iso_z

if TYPE_CHECKING:  # imported where the client is built (bot/wiring/elastic.py)
    from elasticsearch import Elasticsearch

MAX_HITS = 200


@dataclass(frozen=True)
class DeployFields:
    """Field names in the deploy-events index; service and version must be keyword fields."""

    timestamp: str = "@timestamp"
    service: str = "service"
    version: str = "version"
    previous_version: str = "previous_version"
    author: str = "author"
    commit: str = "commit"
    summary: str = "summary"
    diff: str = "diff"


class ElasticsearchDeploys:
    """A DeploySource over one index."""

    def __init__(self, client: Elasticsearch, index: str = "deploys", fields: DeployFields | None = None) -> None:
        self.client = client
        self.index = index
        self.fields = fields or DeployFields()

    def describe(self) -> str:
        """Where the deploy records come from."""
        return f"Elasticsearch index {self.index}"

    def services(self) -> list[str]:
        """Every service with a deploy event."""
        return field_values(self.client, self.index, self.fields.service)

    def records(self, service: str | None, start: datetime, end: datetime) -> list[DeployRecord]:
        """Deploy events in [start, end), newest first."""
        f = self.fields
        filters: list[dict[str, Any]] = [{"range": {f.timestamp: {"gte": iso_z(start), "lt": iso_z(end)}}}]
        if service is not None:
            filters.append({"term": {f.service: service}})
        return [self._record(h["_source"]) for h in self._hits({"bool": {"filter": filters}}, MAX_HITS)]

    def versions(self, service: str) -> list[str]:
        """The service's versions, newest first."""
        f = self.fields
        hits = self._hits({"term": {f.service: service}}, MAX_HITS, source=[f.version])
        return list(dict.fromkeys(str(_field(h["_source"], f.version)) for h in hits))

    def diff(self, service: str, version: str) -> DeployDiff | None:
        """The stored diff of one deploy event."""
        f = self.fields
        query = {"bool": {"filter": [{"term": {f.service: service}}, {"term": {f.version: version}}]}}
        hits = self._hits(query, 1)
        if not hits:
            return None
        source = hits[0]["_source"]
        return DeployDiff(self._record(source), str(_field(source, f.diff)))

    def _hits(self, query: dict[str, Any], size: int, source: list[str] | None = None) -> list[dict[str, Any]]:
        reply = es_request(
            "reading deploy records",
            lambda: self.client.search(
                index=self.index,
                query=query,
                size=size,
                sort=[{self.fields.timestamp: {"order": "desc"}}],
                source_includes=source,
            ),
        )
        return list(reply["hits"]["hits"])

    def _record(self, source: dict[str, Any]) -> DeployRecord:
        f = self.fields
        try:
            moment = datetime.fromisoformat(str(_field(source, f.timestamp)))
        except ValueError as exc:  # a wrong field name is a setting to fix, not a crash
            raise ToolError(
                f"a deploy event in {self.index} has no ISO time in field {f.timestamp!r} "
                f"(the configured timestamp field): {exc}"
            ) from exc
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        return DeployRecord(
            service=str(_field(source, f.service)),
            version=str(_field(source, f.version)),
            at=moment,
            author=str(_field(source, f.author)),
            summary=str(_field(source, f.summary)),
            commit=str(_field(source, f.commit)),
            previous_version=str(_field(source, f.previous_version)),
            files=files_from_diff(str(_field(source, f.diff))),
        )


def _field(source: dict[str, Any], name: str) -> Any:
    value = source_field(source, name)
    return "" if value is None else value
