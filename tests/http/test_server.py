"""bot/http/server.py: longest-prefix routing, /healthz status codes, a real waitress server."""

from __future__ import annotations

from typing import Any

import requests

from bot.http.server import health_app, json_response, route, start_server


def named(name: str) -> Any:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        return json_response(start_response, 200, {"app": name, "path": environ["PATH_INFO"]})

    return app


def test_longest_prefix_wins_and_unknown_paths_get_404() -> None:
    app = route(
        {
            "/api/": named("api"),
            "/api/admin/": named("admin"),
            "/metrics": named("metrics"),
            "/healthz": health_app(lambda: {"status": "ok"}),
        }
    )
    server = start_server(app, "127.0.0.1", 0, threads=2)
    try:

        def get(path: str) -> requests.Response:
            return requests.get(f"{server.url}{path}", timeout=5)

        assert get("/api/traces/1").json()["app"] == "api"
        assert get("/api/admin/x").json()["app"] == "admin"
        assert get("/metrics").json()["app"] == "metrics"
        assert get("/metricsx").status_code == 404
        assert get("/").status_code == 404
        assert get("/healthz").json() == {"status": "ok"}
    finally:
        server.stop()


def test_health_is_503_until_ready_and_when_the_check_fails() -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("boom")

    app = route(
        {
            "/starting": health_app(lambda: {"status": "starting", "socket_connected": False}),
            "/broken": health_app(broken),
        }
    )
    server = start_server(app, "127.0.0.1", 0, threads=2)
    try:
        starting = requests.get(f"{server.url}/starting", timeout=5)
        assert starting.status_code == 503 and starting.json()["socket_connected"] is False
        broken_response = requests.get(f"{server.url}/broken", timeout=5)
        assert broken_response.status_code == 503 and broken_response.json()["status"] == "degraded"
    finally:
        server.stop()
