"""Index names as teams keep them, and the index pattern that names a service.

Daily indices (`logs-order-2026.12.05`, `logs-order-2026-12-05`, `logs-order-20261205`), monthly ones
(`logs-order-2026.12`), rollover indices (`logs-order-000003`) and data streams (`logs-order-default`, whose backing
indices `.ds-logs-order-default-2026.12.05-000001` are never named directly) all reduce to a family (`logs-order`).
A pattern with `{service}` (`logs-{service}-*`) reads the service out of the family, so one service's search touches
only its own indices and a store whose documents carry no service field still knows its services.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tools.base import ToolError
from tools.elastic import es_request

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

SERVICE_PLACEHOLDER = "{service}"
_DATED = re.compile(
    r"^(?P<family>.+?)-(?:19|20)\d\d(?P<sep>[.\-]?)(?:0[1-9]|1[0-2])(?P<day>(?P=sep)(?:0[1-9]|[12]\d|3[01]))?(?:-\d{1,6})?$"
)
_ROLLOVER = re.compile(r"^(?P<family>.+?)-\d{6}$")
_UNSAFE_IN_INDEX = re.compile(r"[\s,*?\"<>|/\\#:]")
Kind = Literal["daily", "monthly", "rollover", "data stream", "single"]


@dataclass(frozen=True)
class IndexName:
    """An index or data stream and the family it belongs to."""

    name: str
    family: str
    kind: Kind


def index_name(name: str, *, data_stream: bool = False) -> IndexName:
    """`logs-order-2026.12.05` -> family `logs-order`, daily; a data stream loses its namespace (`-default`)."""
    if data_stream:
        return IndexName(name, name.rsplit("-", 1)[0] if name.count("-") >= 2 else name, "data stream")
    dated = _DATED.match(name)
    if dated:
        return IndexName(name, dated.group("family"), "daily" if dated.group("day") else "monthly")
    rollover = _ROLLOVER.match(name)
    if rollover:
        return IndexName(name, rollover.group("family"), "rollover")
    return IndexName(name, name, "single")


def has_service(pattern: str) -> bool:
    return SERVICE_PLACEHOLDER in pattern


def pattern_for(pattern: str, service: str | None) -> str:
    """The index pattern to search: `logs-{service}-*` -> `logs-order-*` for one service, `logs-*-*` for all."""
    if not has_service(pattern):
        return pattern
    if service is None:
        return pattern.replace(SERVICE_PLACEHOLDER, "*")
    if not service or _UNSAFE_IN_INDEX.search(service):
        raise ToolError(f"service {service!r} cannot be part of an index name; use a service the logs list.")
    return pattern.replace(SERVICE_PLACEHOLDER, service)


def service_of(index: IndexName, pattern: str) -> str | None:
    """The service an index belongs to under a `{service}` pattern (matched against its family), else None."""
    if not has_service(pattern):
        return None
    head = re.sub(r"-?\*$", "", pattern)  # the trailing `-*` stands for the date, rollover number or namespace
    parts = [re.escape(p) for p in head.split(SERVICE_PLACEHOLDER)]
    regex = "(?P<service>[^*]+)".join(p.replace(r"\*", ".*") for p in parts)
    match = re.fullmatch(regex, index.family)
    return match.group("service") if match else None


def resolved_names(client: Elasticsearch, pattern: str) -> list[IndexName]:
    """Every index and data stream the pattern matches (`GET _resolve/index`), backing indices left out."""
    wanted = pattern_for(pattern, None)
    reply = es_request(
        f"listing the indices of {wanted}",
        lambda: client.perform_request(
            "GET", f"/_resolve/index/{wanted}", params={"expand_wildcards": "open"}, headers={"accept": _JSON}
        ),
    )
    return names_from_resolve(reply.body if hasattr(reply, "body") else reply)


def names_from_resolve(body: Any) -> list[IndexName]:
    """IndexNames from a `_resolve/index` reply: plain indices, and data streams (their backing indices skipped)."""
    names = [index_name(str(i["name"])) for i in body.get("indices", []) if not i.get("data_stream")]
    names += [index_name(str(d["name"]), data_stream=True) for d in body.get("data_streams", [])]
    return sorted(names, key=lambda n: n.name)


_JSON = "application/json"
