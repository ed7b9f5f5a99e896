"""wiring.build_api from Settings, mounted through bot/http/server.py's router as `opsbot serve` does."""

from __future__ import annotations

import threading
from pathlib import Path
from wsgiref.simple_server import make_server

import requests
from pydantic import SecretStr

from bot import wiring
from bot.config import AccessSettings, ServerSettings, Settings, SlackSettings
from bot.http.server import route
from bot.http.telemetry import Telemetry
from bot.store.sqlite import SqliteTraceStore
from tests.http.conftest import QuietHandler, ThreadingWSGIServer, canned_responder


def test_build_api_serves_settings_token_and_access_policy(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        server=ServerSettings(api_token=SecretStr("s3cret-token"), api_workers=1, api_queue_size=2),
        access=AccessSettings(allowed_channels=["C-OPS"], rate_limit_per_minute=10),
        slack=SlackSettings(alert_channel="C-ALERTS"),
    )
    store = SqliteTraceStore(tmp_path / "t.db")
    api = wiring.build_api(settings, canned_responder(), store, Telemetry())
    app = route({"/api/": api, "/metrics": api})
    server = make_server("127.0.0.1", 0, app, server_class=ThreadingWSGIServer, handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        auth = {"Authorization": "Bearer s3cret-token"}

        def ask(channel: str) -> requests.Response:
            body = {"question": "why?", "channel": channel}
            return requests.post(f"{url}/api/diagnose", json=body, headers=auth, timeout=30)

        ok = ask("C-OPS")
        assert ok.status_code == 200 and store.get(ok.json()["trace_id"]) is not None
        assert ask("C-X").status_code == 403
        assert requests.get(f"{url}/metrics", timeout=30).text.count("opsbot_api_requests_total{") == 2
    finally:
        server.shutdown()
        server.server_close()
        store.close()
