"""Readiness: a replica is ready for work once every backend it needs has answered; liveness (/livez) is separate.

A replica whose Prometheus, Elasticsearch or Redis does not answer yet (or never will: a wrong host) would take work
it cannot do. So /readyz says "starting", with what it waits for, until each backend has answered once; a probe
runs on a thread of its own, never in a request, and a request only reads its result. Then it stays ready: a
backend lost later shows in the answers, in /metrics and in `opsbot doctor`, rather than taking every replica out
of the Service at the same moment (a shared backend going away would take the whole fleet with it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

Probe = Callable[[], str]  # "" once the backend answered as it should, else why not (one line)


class Readiness:
    """Polls each probe every `every_s` until it answered once; `report` is what /readyz adds while waiting."""

    def __init__(self, probes: Mapping[str, Probe], *, every_s: float = 2.0) -> None:
        self._probes, self._every_s = dict(probes), every_s
        self._waiting: dict[str, str] = dict.fromkeys(self._probes, "not asked yet")
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    @property
    def ready(self) -> bool:
        with self._lock:
            return not self._waiting

    def report(self) -> dict[str, Any]:
        """{} once ready; else {"status": "starting", "waiting_for": {backend: why}}."""
        with self._lock:
            waiting = dict(self._waiting)
        return {"status": "starting", "waiting_for": waiting} if waiting else {}

    def start(self) -> None:
        """Probe now and then every `every_s` in the background until every backend has answered."""
        threading.Thread(target=self._poll, name="readiness", daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()

    def check_once(self) -> None:
        for name in list(self._waiting_now()):
            why = self._ask(name)
            with self._lock:
                if why:
                    self._waiting[name] = why
                else:
                    self._waiting.pop(name, None)
                    log.info("readiness: %s answers", name)

    def _poll(self) -> None:
        while not self._stopped.is_set():
            self.check_once()
            if self.ready:
                log.info("readiness: every backend answered; ready")
                return
            self._stopped.wait(self._every_s)

    def _waiting_now(self) -> list[str]:
        with self._lock:
            return list(self._waiting)

    def _ask(self, name: str) -> str:
        try:
            return self._probes[name]()
        except Exception as exc:  # a probe that breaks is a backend not answering, never a crash
            return f"{type(exc).__name__}: {exc}"
