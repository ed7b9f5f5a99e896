"""The Prometheus client over real HTTP: the sandbox's real Prometheus, then stand-ins for every fault it handles.

What it keeps for the model and the answer: a timeout on every request, one retry on connect errors and 502-504
(honouring Retry-After), the bearer token, TLS verification against the system's store or SSL_CERT_FILE, the proxy
the environment names, and each failure as a ToolError in one of three forms ("did not answer in time", "is
unreachable", "rejected the request: HTTP <status>: <Prometheus' own text>").
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from bot import wiring
from tests.fakes.faulty import closed_port_url
from tests.tools.conftest import tool_settings
from tests.tools.metrics.scripted_prometheus import (
    LABEL_VALUES,
    Reply,
    scripted_prometheus,
    self_signed_certificate,
    server_context,
)
from tools.base import ToolError
from tools.metrics.prometheus import PrometheusAPI

UNAVAILABLE = {"status": "error", "errorType": "unavailable", "error": "upstream connect error"}
MATRIX = {"status": "success", "data": {"resultType": "matrix", "result": []}}
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")


@pytest.fixture
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


def test_the_real_prometheus_answers_a_range_query_and_its_label_values(sandbox: Any) -> None:
    client = wiring.build_prometheus(tool_settings(prometheus_url=sandbox.prometheus_url))
    end = sandbox.incident_at + timedelta(hours=1)

    series = client.query_range('up{service="order"}', end - timedelta(hours=2), end, "60s")

    assert [s["metric"]["service"] for s in series] == ["order"]
    assert len(series[0]["values"]) == 121 and all(value == "1" for _, value in series[0]["values"])
    assert "order" in client.label_values("service") and "payment" in client.label_values("service")


def test_a_range_query_sends_the_window_in_whole_seconds_and_the_step() -> None:
    start, end = _window()
    with scripted_prometheus(Reply(body=MATRIX)) as prometheus:
        assert PrometheusAPI(prometheus.url).query_range("sum(up)", start, end, "60s") == []
    path, query = prometheus.lines[0].removeprefix("GET ").split("?")
    assert path == "/api/v1/query_range"
    assert parse_qs(query) == {
        "query": ["sum(up)"],
        "start": [str(round(start.timestamp()))],
        "end": [str(round(end.timestamp()))],
        "step": ["60s"],
    }


def test_a_bad_gateway_is_retried_once_then_its_text_is_kept() -> None:
    with scripted_prometheus(Reply(502, UNAVAILABLE)) as failing:
        client = PrometheusAPI(failing.url, timeout_s=2.0, backoff_s=0.0)
        with pytest.raises(ToolError, match=r"Prometheus rejected the request: HTTP 502: upstream connect error"):
            client.label_values("service")
    assert len(failing.seen) == 2


@pytest.mark.parametrize("status", [503, 429])
def test_a_retry_after_is_waited_for_then_the_answer_is_used(status: int) -> None:
    """The wait is a lower bound the server checks (the client slept at least Retry-After), not a speed."""
    with scripted_prometheus(Reply(status, UNAVAILABLE, {"Retry-After": "1"}), Reply()) as busy:
        assert PrometheusAPI(busy.url, backoff_s=0.0).label_values("service") == LABEL_VALUES["data"]
    first, second = busy.seen
    assert second.at_s - first.at_s >= 1.0


@pytest.mark.parametrize("status", [500, 429])
def test_an_error_without_a_retry_reason_is_not_retried(status: int) -> None:
    body = {"status": "error", "errorType": "internal", "error": "query processing would load too many samples"}
    with (
        scripted_prometheus(Reply(status, body)) as failing,
        pytest.raises(ToolError, match=rf"^Prometheus rejected the request: HTTP {status}: query processing"),
    ):
        PrometheusAPI(failing.url, backoff_s=0.0).query_range("up", *_window(), "60s")
    assert len(failing.seen) == 1


def test_a_second_bad_gateway_after_a_retry_is_not_retried_again() -> None:
    with (
        scripted_prometheus(Reply(503, UNAVAILABLE), Reply(502, UNAVAILABLE), Reply()) as failing,
        pytest.raises(ToolError, match=r"HTTP 502: upstream connect error"),
    ):
        PrometheusAPI(failing.url, backoff_s=0.0).label_values("service")
    assert len(failing.seen) == 2


def test_an_answer_that_is_not_prometheus_json_is_quoted_not_parsed() -> None:
    login_page = b"<html><body>Sign in to continue</body></html>"
    with (
        scripted_prometheus(Reply(body=login_page)) as proxy_login,
        pytest.raises(ToolError, match=r"rejected the request: HTTP 200: <html><body>Sign in"),
    ):
        PrometheusAPI(proxy_login.url, timeout_s=2.0).query_range("up", *_window(), "60s")


def test_an_empty_error_answer_says_so() -> None:
    with (
        scripted_prometheus(Reply(404, b"")) as empty,
        pytest.raises(ToolError, match=r"rejected the request: HTTP 404: an empty answer$"),
    ):
        PrometheusAPI(empty.url).label_values("service")


def test_a_redirect_is_followed() -> None:
    moved = Reply(302, b"", {"Location": "/prometheus/api/v1/label/service/values"})
    with scripted_prometheus(moved, Reply()) as behind_a_prefix:
        assert PrometheusAPI(behind_a_prefix.url).label_values("service") == ["order", "payment"]
    assert behind_a_prefix.lines[1] == "GET /prometheus/api/v1/label/service/values"


@pytest.mark.parametrize("call", ["label_values", "query_range"])
def test_every_request_has_the_timeout(call: str) -> None:
    with scripted_prometheus(Reply(delay_s=3.0)) as slow:
        client = PrometheusAPI(slow.url, timeout_s=0.3)
        with pytest.raises(ToolError, match=rf"^Prometheus at {slow.url} did not answer in time: .*timed out"):
            client.label_values("service") if call == "label_values" else client.query_range("up", *_window(), "60s")
    assert len(slow.seen) == 1  # a read that timed out is not sent again


def test_a_closed_port_is_unreachable() -> None:
    url = closed_port_url()
    with pytest.raises(ToolError, match=rf"^Prometheus at {url} is unreachable: .*(refused|Failed to establish)"):
        PrometheusAPI(url, timeout_s=2.0).label_values("service")


def test_the_bearer_token_is_sent_with_every_request() -> None:
    with scripted_prometheus(Reply(), Reply(body=MATRIX)) as prometheus:
        settings = tool_settings(prometheus_url=prometheus.url, prometheus={"bearer_token": "s3cret-token"})
        client = wiring.build_prometheus(settings)
        client.label_values("service")
        client.query_range("up", *_window(), "60s")
    assert [seen.headers.get("Authorization") for seen in prometheus.seen] == ["Bearer s3cret-token"] * 2
    assert all(seen.headers.get("Accept") == "application/json" for seen in prometheus.seen)


def test_without_a_token_no_authorization_is_sent() -> None:
    with scripted_prometheus() as prometheus:
        wiring.build_prometheus(tool_settings(prometheus_url=prometheus.url)).label_values("service")
    assert "Authorization" not in prometheus.seen[0].headers


def test_the_proxy_named_by_the_environment_is_used(no_proxy_variables: pytest.MonkeyPatch) -> None:
    with scripted_prometheus() as proxy:
        no_proxy_variables.setenv("http_proxy", proxy.url)
        client = PrometheusAPI("http://prometheus.example:9090", timeout_s=2.0)
        assert client.label_values("service") == ["order", "payment"]
    assert proxy.lines == ["GET http://prometheus.example:9090/api/v1/label/service/values"]


def test_an_https_prometheus_is_reached_through_the_https_proxy_and_a_refused_tunnel_is_retried_once(
    no_proxy_variables: pytest.MonkeyPatch,
) -> None:
    url = "https://prometheus.example:9443"
    with (
        scripted_prometheus(Reply(403, b"")) as proxy,
        pytest.raises(ToolError, match=rf"^Prometheus at {url} is unreachable: .*Tunnel connection failed: 403"),
    ):
        no_proxy_variables.setenv("HTTPS_PROXY", proxy.url)
        PrometheusAPI(url, timeout_s=2.0, backoff_s=0.0).label_values("service")
    assert proxy.lines == ["CONNECT prometheus.example:9443"] * 2  # a connect error: one retry


def test_a_host_named_by_no_proxy_is_reached_directly(no_proxy_variables: pytest.MonkeyPatch) -> None:
    with scripted_prometheus() as prometheus:
        no_proxy_variables.setenv("HTTP_PROXY", closed_port_url())
        no_proxy_variables.setenv("NO_PROXY", "127.0.0.1")
        assert PrometheusAPI(prometheus.url, timeout_s=2.0).label_values("service") == ["order", "payment"]
    assert prometheus.lines == ["GET /api/v1/label/service/values"]


@pytest.fixture
def https_prometheus(certificate: tuple[Path, Path]) -> Iterator[str]:
    with scripted_prometheus(tls=server_context(*certificate)) as prometheus:
        yield prometheus.url


def test_a_certificate_the_system_does_not_trust_is_refused(
    https_prometheus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ToolError, match=r"is unreachable: .*CERTIFICATE_VERIFY_FAILED"):
        PrometheusAPI(https_prometheus, timeout_s=2.0).label_values("service")


def test_ssl_cert_file_names_the_ca_to_trust(
    https_prometheus: str, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    assert PrometheusAPI(https_prometheus, timeout_s=2.0).label_values("service") == ["order", "payment"]


def test_verification_can_be_switched_off(https_prometheus: str) -> None:
    settings = tool_settings(prometheus_url=https_prometheus, prometheus={"verify_tls": False})
    assert wiring.build_prometheus(settings).label_values("service") == ["order", "payment"]


def test_the_url_is_kept_without_a_trailing_slash() -> None:
    assert PrometheusAPI("http://127.0.0.1:9/").url == "http://127.0.0.1:9"
    assert urlsplit(PrometheusAPI("http://prometheus:9090/prom/").url).path == "/prom"


def _window() -> tuple[datetime, datetime]:
    end = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
    return end - timedelta(hours=1), end
