"""What the Elasticsearch log and deploy sources share: client failures as observations the model can read, and
reading a configured field out of a document."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from tools.base import ToolError

if TYPE_CHECKING:  # the client is imported where it is built: ~40 MB and ~0.2 s that a SQLite setup never needs
    from elasticsearch import Elasticsearch

T = TypeVar("T")


def es_request(what: str, request: Callable[[], T]) -> T:
    """Run one client call; unreachable, slow or refusing clusters become a ToolError with their own text."""
    from elasticsearch import ApiError, ConnectionError, ConnectionTimeout, TransportError  # loaded with the client

    try:
        return request()
    except ConnectionTimeout as exc:
        raise ToolError(f"{what}: Elasticsearch did not answer in time ({exc}).") from exc
    except ConnectionError as exc:
        raise ToolError(f"{what}: Elasticsearch is unreachable ({exc}).") from exc
    except ApiError as exc:
        raise ToolError(f"{what}: Elasticsearch answered {exc}") from exc
    except TransportError as exc:
        raise ToolError(f"{what}: Elasticsearch transport error ({exc}).") from exc


def field_values(client: Elasticsearch, index: str, field: str, *, size: int = 1000) -> list[str]:
    """The distinct values of a keyword field (a terms aggregation), sorted; e.g. every service in an index."""
    aggs = {"values": {"terms": {"field": field, "size": size}}}
    reply = es_request(f"listing {field} values", lambda: client.search(index=index, size=0, aggs=aggs))
    return sorted(b["key"] for b in reply.get("aggregations", {}).get("values", {}).get("buckets", []))


def source_field(source: dict[str, Any], name: str) -> Any:
    """A document's field by its configured name; a dotted name (ECS `host.name`) also reads nested objects."""
    if name in source or "." not in name:
        return source.get(name)
    value: Any = source
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value
