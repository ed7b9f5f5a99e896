"""What `opsbot serve` answers from its first moment, before its surfaces are built: /livez, /readyz, and a 503
for the rest.

A fleet's trace store (Elasticsearch) may come up after opsbot does (both deployed at once). serve then listens
at once, says "starting" at /readyz with what it waits for, answers /livez (so the orchestrator does not restart a
process that is only waiting), and builds its surfaces once the store opens. Settings it cannot use stop it before
it listens (bot/wiring/startup.py); a backend that does not answer yet only keeps it unready.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from slack_bolt.adapter.socket_mode import SocketModeHandler

from bot.config import Settings
from bot.http.dispatch import Dispatch
from bot.http.readiness import Readiness
from bot.http.server import health_app, liveness_app, route
from bot.http.wsgi import StartResponse, WSGIApp, json_response
from bot.slack.intake.listeners import SlackSurface
from bot.store.base import TraceStore

log = logging.getLogger(__name__)

STORE_RETRY_S = (1.0, 2.0, 5.0, 10.0)  # waits between tries to open the trace store; then every 10 s


@dataclass(frozen=True)
class Wired:
    """What serve built once its store opened: the whole app, and what a stop drains."""

    app: WSGIApp
    dispatcher: Dispatch
    slack: SlackSurface | None
    handler: SocketModeHandler | None


class Front:
    """The app serve listens with; `publish` hands it the built surfaces, `stop` ends the wait for them."""

    def __init__(self, readiness: Readiness, slack_report: Callable[[Wired, threading.Event], dict[str, Any]]):
        self._readiness, self._slack_report = readiness, slack_report
        self.stopping = threading.Event()
        self.waiting = "being built"  # what /readyz says while the surfaces are not built
        self._wired: Wired | None = None
        self._lock = threading.Lock()

    def publish(self, wired: Wired) -> bool:
        """Serve `wired` from now on; False (and nothing served) when serve is stopping already."""
        with self._lock:
            if self.stopping.is_set():
                return False
            self._wired = wired
            return True

    def stop(self) -> Wired | None:
        """Stop waiting; what was published (to drain), if anything."""
        with self._lock:
            self.stopping.set()
            return self._wired

    def health(self) -> dict[str, Any]:
        """/readyz: "starting" until every backend answered and the surfaces are built; then the Slack side's."""
        if self.stopping.is_set():
            return {"status": "stopping"}
        report = self._readiness.report()
        wired = self._wired
        if wired is None:
            waiting = dict(report.get("waiting_for") or {}) | {"surfaces": self.waiting}
            return {"status": "starting", "waiting_for": waiting}
        return report or self._slack_report(wired, self.stopping)

    def app(self) -> WSGIApp:
        health = health_app(self.health)
        return route({"/livez": liveness_app(), "/readyz": health, "/healthz": health, "/": self._rest})

    def _rest(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        wired = self._wired
        if wired is None:
            return json_response(start_response, 503, {"status": "starting", "waiting_for": self.waiting})
        return wired.app(environ, start_response)


def open_store(settings: Settings, front: Front, build: Callable[[Settings], TraceStore]) -> TraceStore | None:
    """The trace store, once it opens: a shared one (Elasticsearch) that does not answer yet is tried again, and
    /readyz says so; a local one that fails raises at once. None when serve stops first."""
    delays = iter(STORE_RETRY_S)
    while not front.stopping.is_set():
        try:
            return build(settings)
        except Exception as exc:
            if settings.store.backend != "elasticsearch":
                raise
            where = f"OPSBOT_ELASTICSEARCH__URL={settings.elasticsearch.url}"
            front.waiting = f"the trace store does not open ({where}): {type(exc).__name__}"
            log.warning("waiting for the trace store (%s): %s", where, exc)
            front.stopping.wait(next(delays, STORE_RETRY_S[-1]))
    return None
