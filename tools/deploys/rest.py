"""A small JSON-over-HTTPS client for the deploy APIs (GitHub, Argo CD): bearer auth, one retry where waiting
helps, pages followed by their Link header, and every failure a ToolError that carries the API's own words.

- 429 (and GitHub's 403 secondary rate limit) with a short Retry-After: waited for once; a longer one is reported.
- 502, 503, 504: asked once more; then the status and the body are reported.
- No answer within the timeout: reported with the timeout, never waited out again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import requests

from tools.base import ToolError

MAX_RETRY_AFTER_S = 2.0  # a longer wait is the model's (and the user's) to decide on
_RETRIED = frozenset({502, 503, 504})


class RestClient:
    """GET JSON from one API; `name` and `token_setting` make errors say which API and which setting."""

    def __init__(
        self,
        base_url: str,
        *,
        name: str,
        token: str = "",
        token_setting: str = "",
        timeout_s: float = 10.0,
        verify_tls: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = name
        self.token_setting = token_setting
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.verify = verify_tls
        self.session.headers.update(headers or {})
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def get(self, path: str, params: Mapping[str, Any] | None = None, *, what: str) -> Any:
        """The JSON body of one GET (path relative to the base URL)."""
        return self._get(self.base_url + path, params, what).json()

    def pages(self, path: str, params: Mapping[str, Any], *, what: str, max_pages: int) -> tuple[list[Any], bool]:
        """The items of every page (rel="next" links), at most `max_pages`; True when more pages were left."""
        url: str | None = self.base_url + path
        items: list[Any] = []
        query: Mapping[str, Any] | None = params
        for _ in range(max_pages):
            assert url is not None
            reply = self._get(url, query, what)
            body = reply.json()
            items += body if isinstance(body, list) else []
            url, query = reply.links.get("next", {}).get("url"), None  # the next link carries the query itself
            if url is None:
                return items, False
        return items, True

    def _get(self, url: str, params: Mapping[str, Any] | None, what: str) -> requests.Response:
        for attempt in (1, 2):
            try:
                reply = self.session.get(url, params=params, timeout=self.timeout_s)
            except requests.Timeout as exc:
                raise ToolError(f"{self.name} did not answer within {self.timeout_s:g} s while {what}.") from exc
            except requests.RequestException as exc:
                raise ToolError(f"{self.name} is unreachable while {what}: {type(exc).__name__}: {exc}") from exc
            if attempt == 1 and self._worth_retrying(reply):
                continue
            if reply.status_code >= 400:
                raise ToolError(self._failure(reply, what))
            return reply
        raise AssertionError("unreachable")

    def _worth_retrying(self, reply: requests.Response) -> bool:
        if reply.status_code in _RETRIED:
            time.sleep(0.2)
            return True
        wait = _retry_after_s(reply)
        if reply.status_code in (403, 429) and wait is not None and wait <= MAX_RETRY_AFTER_S:
            time.sleep(wait)
            return True
        return False

    def _failure(self, reply: requests.Response, what: str) -> str:
        body = " ".join(reply.text.split())[:300]
        text = f"{self.name} answered HTTP {reply.status_code} while {what}: {body}"
        if reply.status_code in (403, 429) and "Retry-After" in reply.headers:
            text += f" (rate limited: Retry-After {reply.headers['Retry-After']} s; try again later)"
        elif reply.status_code == 401:
            text += f" (check {self.token_setting})" if self.token_setting else ""
        return text


def _retry_after_s(reply: requests.Response) -> float | None:
    value = reply.headers.get("Retry-After", "")
    return float(value) if value.replace(".", "", 1).isdigit() else None
