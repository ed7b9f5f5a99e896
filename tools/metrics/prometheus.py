"""PrometheusAPI: the two calls query_metrics makes (a range query, a label's values) through prometheus-api-client.

PrometheusConnect sends the requests; this wrapper gives it what it does not do on its own:
- every failure as a ToolError whose text the model and the answer can use: "did not answer in time", "is
  unreachable", or "rejected the request: HTTP 400: <Prometheus' error>". The library raises requests' exceptions,
  and for a non-200 answer its own exception holding the repr of the body; a response hook on the session reads
  each answer first, so Prometheus' own error text (or the start of a page that is not Prometheus') is kept.
- one retry on connect errors and 502-504, honouring Retry-After (urllib3's Retry, handed to the library, whose
  default of three retries backing off from 1 s, on 408, 429 and 500-504 too, is more than a diagnosis can wait).
- a timeout on the whole of every request (urllib3's total; a plain number would bound each read only).
- TLS verification against the system's trust store, or the file SSL_CERT_FILE names; requests alone would trust
  certifi's bundle (or REQUESTS_CA_BUNDLE) instead.
The bearer token is a header. The proxy that HTTP(S)_PROXY / NO_PROXY name for the URL is found once, by requests,
when the client is built, and handed to the library.

Nothing at start-up imports this module: tools/metrics/query.py names the class for type checking only, and the
wiring builds the client on its first use (bot/wiring/core.py OnFirstUse), so requests loads with the first query.
"""

from __future__ import annotations

import json
import re
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import requests
import urllib3
from prometheus_api_client import PrometheusConnect
from urllib3.util.retry import Retry

from tools.base import ToolError

_MAX_ERROR_CHARS = 500
_SUCCESS = b'{"status":"success",'


class PrometheusAPI:
    """GET /api/v1/query_range, /api/v1/labels and /api/v1/label/<name>/values on one Prometheus, results as
    Prometheus sends them."""

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
        headers = {"Accept": "application/json"}
        if bearer_token:
            headers["Authorization"] = f"Bearer {bearer_token}"
        retry = Retry(
            total=retries, read=0, backoff_factor=backoff_s, status_forcelist=(502, 503, 504), raise_on_status=False
        )
        timeout: Any = urllib3.Timeout(total=timeout_s)  # requests passes a urllib3 Timeout through as it is
        proxies = requests.utils.get_environ_proxies(self.url)  # HTTP(S)_PROXY unless NO_PROXY names the host
        self._prometheus = PrometheusConnect(
            self.url, headers=headers, retry=retry, session=_session(verify_tls), timeout=timeout, proxy=proxies
        )

    def query_range(self, promql: str, start: datetime, end: datetime, step: str) -> list[dict[str, Any]]:
        """The matrix of a range query: one {"metric": labels, "values": [[ts, "value"], ...]} per series."""
        with _failures_as_tool_errors(self.url):
            result: list[dict[str, Any]] = self._prometheus.custom_query_range(promql, start, end, step)
        return result

    def label_values(self, label: str, match: str = "", since: datetime | None = None) -> list[str]:
        """Every value the label takes in Prometheus; with `match`, on the series that selector matches, and with
        `since`, on the series that have samples since then (discovery and doctor ask so)."""
        with _failures_as_tool_errors(self.url):
            values: list[str] = self._prometheus.get_label_values(label, params=_series_params(match, since))
        return values

    def label_names(self, match: str = "", since: datetime | None = None) -> list[str]:
        """The label names of the series `match` selects (every series without it), as label_values filters."""
        with _failures_as_tool_errors(self.url):
            names: list[str] = self._prometheus.get_label_names(params=_series_params(match, since))
        return names

    def metric_types(self) -> dict[str, str]:
        """metric name -> its type as the scraped targets declare it (/api/v1/metadata: counter, gauge, histogram,
        summary); a name whose targets disagree, or that no target described (a backfill, remote write), is absent."""
        with _failures_as_tool_errors(self.url):
            entries: list[dict[str, Any]] = self._prometheus.get_metric_metadata("")
        types: dict[str, set[str]] = {}
        for entry in entries:
            types.setdefault(str(entry.get("metric_name", "")), set()).add(str(entry.get("type", "unknown")))
        return {name: kinds.pop() for name, kinds in types.items() if len(kinds) == 1 and "unknown" not in kinds}


def _series_params(match: str, since: datetime | None) -> dict[str, str]:
    params = {"match[]": match} if match else {}
    return params | ({"start": f"{since.timestamp():.3f}"} if since is not None else {})


def _session(verify_tls: bool) -> requests.Session:
    """The library's session, with the system's trust store and the check of every answer. It reads nothing more
    from the environment on each request (the proxy is read once, ~/.netrc and REQUESTS_CA_BUNDLE never)."""
    session = requests.Session()
    session.trust_env = False
    if verify_tls:
        paths = ssl.get_default_verify_paths()  # OpenSSL's defaults, or SSL_CERT_FILE / SSL_CERT_DIR when set
        session.verify = paths.cafile or paths.capath or True
    else:
        session.verify = False
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # asked for; not a warning per query
    session.hooks["response"].append(_check_answer)
    return session


def _check_answer(response: requests.Response, *args: Any, **kwargs: Any) -> None:
    """A response hook: anything but Prometheus' success (a redirect is followed) raises a ToolError."""
    # Prometheus writes its status first: such an answer is parsed once, by the library (~0.3 ms a day's series).
    if response.is_redirect or (response.status_code == 200 and response.content.startswith(_SUCCESS)):
        return
    check_prometheus_answer(response.status_code, response.content)


def check_prometheus_answer(status: int, body: bytes) -> None:
    """Nothing when this is Prometheus' success; else a ToolError with Prometheus' own error text, or the body's."""
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if status == 200 and isinstance(document, dict) and document.get("status") == "success":
        return
    if isinstance(document, dict) and document.get("error"):
        raise ToolError(f"Prometheus rejected the request: HTTP {status}: {str(document['error'])[:_MAX_ERROR_CHARS]}")
    text = re.sub(r"\s+", " ", body.decode("utf-8", "replace")).strip()[:_MAX_ERROR_CHARS]
    raise ToolError(f"Prometheus rejected the request: HTTP {status}: {text or 'an empty answer'}")


@contextmanager
def _failures_as_tool_errors(url: str) -> Iterator[None]:
    """requests' exceptions as "did not answer in time" or "is unreachable", with urllib3's reason."""
    try:
        yield
    except requests.RequestException as exc:
        cause = exc.args[0] if exc.args else exc  # requests wraps urllib3's MaxRetryError, which holds the reason
        reason = getattr(cause, "reason", None) or cause
        exceptions = urllib3.exceptions
        # NewConnectionError (refused, no route) subclasses ConnectTimeoutError in urllib3 2: test it first.
        slow = isinstance(reason, exceptions.TimeoutError) and not isinstance(reason, exceptions.NewConnectionError)
        if slow or "timed out" in str(reason):
            raise ToolError(f"Prometheus at {url} did not answer in time: {reason}") from exc
        raise ToolError(f"Prometheus at {url} is unreachable: {reason}") from exc
