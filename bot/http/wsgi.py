"""The WSGI vocabulary every HTTP piece shares: the app type and one way to answer with JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from http import HTTPStatus
from typing import Any

from bot.safety.outbound import json_bytes

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def json_response(
    start_response: StartResponse, status: int, body: Mapping[str, Any], extra_headers: Sequence[tuple[str, str]] = ()
) -> list[bytes]:
    """Answer a WSGI request with a JSON body and the status's standard reason phrase."""
    payload = json_bytes(body)  # strict JSON, mentions inert, valid UTF-8 (bot.safety.outbound)
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Error"
    start_response(
        f"{status} {reason}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(payload))), *extra_headers],
    )
    return [payload]
