"""The thin Prometheus client over real HTTP: retries, odd answers and the proxy the environment names.

Its everyday behaviour (query_range, label values, down, slow, 400, 500) is tested through query_metrics in
test_metrics.py against the sandbox's real Prometheus.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.fakes.faulty import fake_backend
from tools.base import ToolError
from tools.metrics.prometheus import PrometheusAPI


def test_a_bad_gateway_is_retried_once_then_its_text_is_kept():
    body = {"status": "error", "errorType": "unavailable", "error": "upstream connect error"}
    with fake_backend(status=502, body=body) as failing:
        client = PrometheusAPI(failing.url, timeout_s=2.0, backoff_s=0.0)
        with pytest.raises(ToolError, match=r"Prometheus rejected the request: HTTP 502: upstream connect error"):
            client.label_values("service")
    assert len(failing.requests) == 2


def test_an_answer_that_is_not_prometheus_json_is_quoted_not_parsed():
    login_page = b"<html><body>Sign in to continue</body></html>"
    with fake_backend(body=login_page) as proxy_login, pytest.raises(ToolError, match=r"HTTP 200: <html><body>Sign in"):
        PrometheusAPI(proxy_login.url, timeout_s=2.0).query_range("up", *_window(), "60s")


def test_the_proxy_named_by_the_environment_is_used(monkeypatch: pytest.MonkeyPatch):
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with fake_backend(body={"status": "success", "data": ["order", "payment"]}) as proxy:
        monkeypatch.setenv("http_proxy", proxy.url)
        client = PrometheusAPI("http://prometheus.example:9090", timeout_s=2.0)
        assert client.label_values("service") == ["order", "payment"]
    assert proxy.requests == ["GET http://prometheus.example:9090/api/v1/label/service/values"]


def _window() -> tuple[datetime, datetime]:
    end = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
    return end - timedelta(hours=1), end
