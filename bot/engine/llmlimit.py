"""One limit on LLM calls in flight for the whole process: Slack, the HTTP API and the webhook share it.

Wiring builds one LimitedLLM around the one adapter, and every surface's Router gets that same object, so a
burst on one surface cannot start more model calls than the endpoint (or the bill) can take. A call waits for a
slot, at most for its time left (the slot holders may be sleeping through a Retry-After); the time it waited is
logged when it is noticeable. Calls of the cheap role (the intent gate, a one-shot
lookup or chit-chat answer) have slots of their own, as many again: quick answers never wait behind diagnoses.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bot.engine.llm import LLM, LLMReply, LLMUnavailable, Role

log = logging.getLogger(__name__)

_WAIT_LOGGED_S = 1.0


class LimitedLLM:
    """An LLM whose `complete` holds one of `max_calls` slots while it runs."""

    def __init__(self, llm: LLM, max_calls: int) -> None:
        self.inner = llm
        self.model = llm.model
        self.cheap_model = getattr(llm, "cheap_model", llm.model)
        self.endpoint = getattr(llm, "endpoint", "")  # named in notes about the model
        self.max_calls = max(max_calls, 1)
        self._slots = {
            "main": threading.BoundedSemaphore(self.max_calls),
            "cheap": threading.BoundedSemaphore(self.max_calls),
        }
        self._lock = threading.Lock()
        self._in_flight = 0
        self.peak_in_flight = 0

    @property
    def in_flight(self) -> int:
        """Calls holding a slot now."""
        return self._in_flight

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stop: Sequence[str] | None = None,
        role: Role = "main",
        max_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> LLMReply:
        """The inner adapter's completion, once a slot is free; the wait comes out of `timeout_s`, and a call that
        finds no free slot within `timeout_s` (other calls holding them, e.g. through a long Retry-After) fails."""
        started = time.monotonic()
        slot = self._slots[role]
        if not slot.acquire(timeout=timeout_s):  # None: as long as it takes
            raise LLMUnavailable(
                f"all {self.max_calls} {role} LLM slots stayed busy for the {timeout_s:.1f} s left of the run's time"
            )
        waited_s = time.monotonic() - started
        if waited_s >= _WAIT_LOGGED_S:
            log.info("LLM call (%s) waited %.1f s for one of %d slots", role, waited_s, self.max_calls)
        with self._lock:
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        try:
            left_s = None if timeout_s is None else max(1.0, timeout_s - waited_s)
            return self.inner.complete(
                messages, tools=tools, stop=stop, role=role, max_tokens=max_tokens, timeout_s=left_s
            )
        finally:
            with self._lock:
                self._in_flight -= 1
            slot.release()


def limited(llm: LLM | None, max_calls: int) -> LLM | None:
    """`llm` behind a shared limit of `max_calls` (unchanged when max_calls <= 0 or there is no LLM)."""
    return LimitedLLM(llm, max_calls) if llm is not None and max_calls > 0 else llm
