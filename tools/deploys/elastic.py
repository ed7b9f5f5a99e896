"""ElasticsearchDeploys: deploy records from a deploy-events index (one document per deploy).

By default documents carry `@timestamp`, `service`, `version`, `previous_version`, `author`, `commit`, `summary`
and `diff` (the unified diff of the service's folder); DeployFields names other fields, and the environment and
status fields when the index has them. How service and version are queried is read from the index's mapping
(tools/deploys/indexfields.py): a keyword field, a text field's keyword sub-field, or a phrase match.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tools.base import ToolError
from tools.deploys.indexfields import FieldUse, field_use, flat_mapping, time_use
from tools.deploys.query import DeployRead, Finding, ReadsDeploys, files_from_diff
from tools.deploys.records import DeployDiff, DeployRecord
from tools.elastic import es_request, field_values, source_field
from tools.timerange import iso_z

if TYPE_CHECKING:  # imported where the client is built (bot/wiring/elastic.py)
    from elasticsearch import Elasticsearch

MAX_HITS = 200
SCANNED_FOR_SERVICES = 1_000  # newest events read for the service list when the service field cannot be aggregated


@dataclass(frozen=True)
class DeployFields:
    """Field names in the deploy-events index ("" for environment and status: the index does not record them)."""

    timestamp: str = "@timestamp"
    service: str = "service"
    version: str = "version"
    previous_version: str = "previous_version"
    author: str = "author"
    commit: str = "commit"
    summary: str = "summary"
    diff: str = "diff"
    environment: str = ""
    status: str = ""
    started: str = ""  # the rollout's start and finish ("" = not recorded)
    finished: str = ""
    action: str = ""  # "rollback" / "restart" where the index says so


@dataclass(frozen=True)
class _Uses:
    timestamp: FieldUse
    service: FieldUse
    version: FieldUse


class ElasticsearchDeploys(ReadsDeploys):
    """A DeploySource over one index (or index pattern)."""

    service_setting = "deploys.service_field"

    def __init__(self, client: Elasticsearch, index: str = "deploys", fields: DeployFields | None = None) -> None:
        self.client = client
        self.index = index
        self.fields = fields or DeployFields()
        self._uses: _Uses | None = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        """Where the deploy records come from."""
        return f"Elasticsearch index {self.index}"

    def services(self) -> list[str]:
        """Every service with a deploy event."""
        use = self.uses().service
        if use.exact:
            return field_values(self.client, self.index, use.query)
        hits = self._hits({"match_all": {}}, SCANNED_FOR_SERVICES, source=[self.fields.service])
        return sorted({str(_field(h["_source"], self.fields.service)) for h in hits} - {""})

    def read(self, service: str | None, start: datetime, end: datetime) -> DeployRead:
        """Deploy events in [start, end), newest first."""
        uses = self.uses()
        filters: list[dict[str, Any]] = [{"range": {uses.timestamp.query: {"gte": iso_z(start), "lt": iso_z(end)}}}]
        if service is not None:
            filters.append(uses.service.clause(service))
        records = [self._record(h["_source"]) for h in self._hits({"bool": {"filter": filters}}, MAX_HITS)]
        records = [r for r in records if service is None or r.service == service]  # a phrase match is not exact
        notes = [u.describe() for u in (uses.service,) if not u.exact]
        return DeployRead(tuple(records), tuple(notes))

    def versions(self, service: str) -> list[str]:
        """The service's versions, newest first."""
        f = self.fields
        hits = self._hits(self.uses().service.clause(service), MAX_HITS, source=[f.version, f.service])
        return list(dict.fromkeys(str(_field(h["_source"], f.version)) for h in hits if _is(h, f.service, service)))

    def diff(self, service: str, version: str, environments: Sequence[str] = ()) -> DeployDiff | None:
        """The stored diff of one deploy event (in one of `environments` first, when it went to several)."""
        uses = self.uses()
        query = {"bool": {"filter": [uses.service.clause(service), uses.version.clause(version)]}}
        hits = [h for h in self._hits(query, 20) if _is(h, self.fields.service, service)]
        hits = [h for h in hits if _is(h, self.fields.version, version)]
        if not hits:
            return None
        wanted = {e.lower() for e in environments}
        env = self.fields.environment
        best = next((h for h in hits if env and str(_field(h["_source"], env)).lower() in wanted), hits[0])
        source = best["_source"]
        return DeployDiff(self._record(source), str(_field(source, self.fields.diff)))

    def check(self) -> list[Finding]:
        """How each queried field is used, from the mapping; a field the mapping lacks is named."""
        try:
            uses = self.uses()
        except ToolError as exc:
            return [Finding("deploys.index", self.index, str(exc), ok=False)]
        return [Finding(u.setting, u.name, u.describe()) for u in (uses.timestamp, uses.service, uses.version)]

    def uses(self) -> _Uses:
        """The mapping's answer for the queried fields, read once."""
        with self._lock:
            if self._uses is None:
                reply = es_request(
                    f"reading the mapping of {self.index}", lambda: self.client.indices.get_mapping(index=self.index)
                )
                fields, f, index = flat_mapping(dict(reply)), self.fields, self.index
                self._uses = _Uses(
                    time_use(fields, "deploys.timestamp_field", f.timestamp, index),
                    field_use(fields, "deploys.service_field", f.service, index),
                    field_use(fields, "deploys.version_field", f.version, index),
                )
            return self._uses

    def _hits(self, query: dict[str, Any], size: int, source: list[str] | None = None) -> list[dict[str, Any]]:
        sort = [{self.uses().timestamp.query: {"order": "desc"}}]
        reply = es_request(
            "reading deploy records",
            lambda: self.client.search(index=self.index, query=query, size=size, sort=sort, source_includes=source),
        )
        return list(reply["hits"]["hits"])

    def _record(self, source: dict[str, Any]) -> DeployRecord:
        f = self.fields
        moment = self._time(source, f.timestamp, "timestamp")
        assert moment is not None
        action = str(_field(source, f.action)).lower() if f.action else ""
        return DeployRecord(
            service=str(_field(source, f.service)),
            version=str(_field(source, f.version)),
            at=moment,
            author=str(_field(source, f.author)),
            summary=str(_field(source, f.summary)),
            commit=str(_field(source, f.commit)),
            previous_version=str(_field(source, f.previous_version)),
            files=files_from_diff(str(_field(source, f.diff))),
            environment=str(_field(source, f.environment)) if f.environment else "",
            status=str(_field(source, f.status)) if f.status else "",
            started=self._time(source, f.started, "started") if f.started else None,
            finished=self._time(source, f.finished, "finished") if f.finished else None,
            action=action if action in ("rollback", "restart") else "",
        )

    def _time(self, source: dict[str, Any], name: str, setting: str) -> datetime | None:
        """The field's ISO time in UTC; None when the document lacks it (a rollout still running has no finish);
        a value that is not a time is a setting to fix, not a crash."""
        value = _field(source, name)
        if value == "" and setting != "timestamp":
            return None
        try:
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError as exc:
            raise ToolError(
                f"a deploy event in {self.index} has no ISO time in field {name!r} "
                f"(the configured {setting} field): {exc}"
            ) from exc
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _field(source: dict[str, Any], name: str) -> Any:
    value = source_field(source, name)
    return "" if value is None else value


def _is(hit: dict[str, Any], field: str, value: str) -> bool:
    return str(_field(hit["_source"], field)) == value
