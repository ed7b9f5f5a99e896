"""PrometheusAPI: the two calls query_metrics makes (query_range, label values), over urllib3 with its Retry.

A thin client in place of prometheus-api-client, which wraps requests: requests adds ~4-5 MB of resident memory
(charset_normalizer, idna, certifi) to a diagnosis for nothing this client does not do. It keeps what that
client gave: a timeout on every request, one retry on connect errors and 502-504 (honouring Retry-After), the
bearer token, TLS verification (the system's trust store, or SSL_CERT_FILE), the proxy named by HTTP(S)_PROXY /
NO_PROXY, and the backend's own error text. Every failure is a ToolError whose text the model and the answer
can use: "did not answer in time", "is unreachable", or "rejected the request: HTTP 400: <Prometheus' error>".

Nothing at start-up imports this module: tools/metrics/query.py names the class for type checking only, and the wiring
builds the client on its first use (bot/wiring/core.py OnFirstUse), so urllib3 loads with the first query.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import urllib3
from urllib3.util.retry import Retry

from tools.base import ToolError

_MAX_ERROR_CHARS = 500


class PrometheusAPI:
    """GET /api/v1/query_range and /api/v1/label/<name>/values on one Prometheus, results as Prometheus sends them."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 10.0,
        verify_tls: bool = True,
        bearer_token: str = "",
        retries: int = 1,
        backoff_s: float = 0.2,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._headers = {"Accept": "application/json"}
        if bearer_token:
            self._headers["Authorization"] = f"Bearer {bearer_token}"
        self._retry = Retry(
            total=retries, read=0, backoff_factor=backoff_s, status_forcelist=(502, 503, 504), raise_on_status=False
        )
        self._pool = _pool_for(self.url, verify_tls)

    def query_range(self, promql: str, start: datetime, end: datetime, step: str) -> list[dict[str, Any]]:
        """The matrix of a range query: one {"metric": labels, "values": [[ts, "value"], ...]} per series."""
        fields = {
            "query": promql,
            "start": str(round(start.timestamp())),
            "end": str(round(end.timestamp())),
            "step": step,
        }
        result: list[dict[str, Any]] = self._get("/api/v1/query_range", fields)["result"]
        return result

    def label_values(self, label: str) -> list[str]:
        """Every value the label takes in Prometheus."""
        values: list[str] = self._get(f"/api/v1/label/{label}/values", {})
        return values

    def _get(self, path: str, fields: Mapping[str, str]) -> Any:
        """The `data` of one GET; a ToolError with the backend's text on every failure."""
        exceptions = urllib3.exceptions
        try:
            response = self._pool.request(
                "GET",
                self.url + path,
                fields=dict(fields),
                headers=self._headers,
                timeout=urllib3.Timeout(total=self.timeout_s),
                retries=self._retry,
            )
        except exceptions.HTTPError as exc:
            reason = getattr(exc, "reason", None) or exc
            # NewConnectionError (refused, no route) subclasses ConnectTimeoutError in urllib3 2: test it first.
            slow = isinstance(reason, exceptions.TimeoutError) and not isinstance(reason, exceptions.NewConnectionError)
            if slow or "timed out" in str(reason):
                raise ToolError(f"Prometheus at {self.url} did not answer in time: {reason}") from exc
            raise ToolError(f"Prometheus at {self.url} is unreachable: {reason}") from exc
        return data_from_response(response.status, response.data)


def data_from_response(status: int, body: bytes) -> Any:
    """The `data` of a Prometheus API answer; a ToolError with Prometheus' own error text when it is not one."""
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if status == 200 and isinstance(document, dict) and document.get("status") == "success":
        return document.get("data")
    if isinstance(document, dict) and document.get("error"):
        raise ToolError(f"Prometheus rejected the request: HTTP {status}: {str(document['error'])[:_MAX_ERROR_CHARS]}")
    text = re.sub(r"\s+", " ", body.decode("utf-8", "replace")).strip()[:_MAX_ERROR_CHARS]
    raise ToolError(f"Prometheus rejected the request: HTTP {status}: {text or 'an empty answer'}")


def _pool_for(url: str, verify_tls: bool) -> urllib3.PoolManager:
    """A pool to the URL's host, through the proxy the environment names for it (as requests did)."""
    parts = urlsplit(url)
    tls: dict[str, Any] = {} if verify_tls else {"cert_reqs": "CERT_NONE", "assert_hostname": False}
    if not verify_tls:
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # asked for; not a warning per query
    proxy = getproxies().get(parts.scheme)
    if proxy and not proxy_bypass(parts.hostname or ""):
        return urllib3.ProxyManager(proxy, maxsize=4, **tls)
    return urllib3.PoolManager(maxsize=4, **tls)
