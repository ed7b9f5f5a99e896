"""One place that turns Elasticsearch client failures into observations the model can read."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from elasticsearch import ApiError, ConnectionError, ConnectionTimeout, TransportError

from tools.base import ToolError

T = TypeVar("T")


def es_request(what: str, request: Callable[[], T]) -> T:
    """Run one client call; unreachable, slow or refusing clusters become a ToolError with their own text."""
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
