"""Every failed Slack Web API attempt, reported to a callback (wiring points it at /metrics).

slack-sdk asks its retry handlers about every attempt, successful or not, before deciding to retry. A
handler placed first that never retries therefore sees each `ok: false` answer, each 429 (also the ones
RateLimitErrorRetryHandler then retries successfully) and each connection failure, for every caller of the
client: the runner, the progress display, Bolt's listeners and the chat stream helper.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.http_retry import RetryHandler, RetryState
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse

log = logging.getLogger(__name__)

ApiErrorObserver = Callable[[str, str], None]  # (method, error), e.g. ("chat.update", "message_not_found")

_LABEL_RX = re.compile(r"[^a-z0-9_.]+")
MAX_LABEL_CHARS = 48  # Slack's error codes are short snake_case words; anything else is cut to stay bounded


class ApiErrorWatch(RetryHandler):
    """A retry handler that never retries: it reports failed attempts and lets the real handlers decide."""

    def __init__(self, on_error: ApiErrorObserver) -> None:
        super().__init__(max_retry_count=0)
        self._on_error = on_error

    def can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        """Report the attempt when it failed; always False, so the next handler in the list decides."""
        failure = error_from_attempt(response, error)
        if failure:
            try:
                self._on_error(method_from_url(request.url), failure)
            except Exception:  # counting an error must never become one
                log.warning("the Slack API error observer failed", exc_info=True)
        return False


def watch_api_errors(client: WebClient, on_error: ApiErrorObserver) -> WebClient:
    """Report every failed attempt of `client` to `on_error` (the watch goes first: the first handler that
    wants to retry ends slack-sdk's search)."""
    client.retry_handlers.insert(0, ApiErrorWatch(on_error))
    return client


def method_from_url(url: str) -> str:
    """The Web API method of a request URL (".../api/chat.postMessage?x=1" -> "chat.postMessage")."""
    return url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "unknown"


def error_from_attempt(response: HttpResponse | None, error: Exception | None) -> str:
    """Slack's error code of a failed attempt ("ratelimited", "channel_not_found", "http_502", "connection");
    "" when it succeeded."""
    if response is None:
        if error is None:
            return ""
        timed_out = isinstance(error, TimeoutError) or isinstance(getattr(error, "reason", None), TimeoutError)
        return "timeout" if timed_out else "connection"  # urllib wraps a connect timeout in URLError
    body = response.body if response.body is not None else _json_from_bytes(response.data)
    if response.status_code == 429:
        return "ratelimited"
    if response.status_code >= 400:
        return _label(str(body.get("error") or f"http_{response.status_code}"))
    return "" if body.get("ok", True) else _label(str(body.get("error") or "unknown"))


def _json_from_bytes(data: bytes | None) -> dict[str, object]:
    try:
        value = json.loads(data or b"{}")
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _label(text: str) -> str:
    return _LABEL_RX.sub("_", text.lower())[:MAX_LABEL_CHARS] or "unknown"
