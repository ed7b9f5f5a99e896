"""One Web API budget per method, shared by every run: Slack's rate tiers are per method, per workspace, per app.

Progress updates (stream appends, edits of the progress message) only spend a call when the budget has one:
a refused update is coalesced into the next one, never dropped from the final answer. The final message waits
for a call. A 429 pauses its method for Retry-After seconds, for every run at once (RateLimitPause sees every
attempt the WebClient makes; the client's own RateLimitErrorRetryHandler still retries the call that got it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from slack_sdk import WebClient
from slack_sdk.http_retry import RetryHandler, RetryState
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse

from bot.slack.delivery.apierrors import method_from_url

log = logging.getLogger(__name__)

# Slack's documented tiers (calls per minute): appendStream Tier 4, update and reactions.add Tier 3,
# reactions.remove Tier 2; setStatus is "special" and taken as Tier 3. chat.stopStream is Tier 2 too (api.slack.com's
# method page) but is not budgeted: it carries the answer, and waiting for it made 20 concurrent answers take 7x
# as long; a 429 on it is retried after Retry-After, then the answer goes by chat.update.
SLACK_PER_CHANNEL_PER_MINUTE = {"chat.postMessage": 60}  # "about 1 message per second per channel"
SLACK_TIERS_PER_MINUTE = {
    "chat.appendStream": 100,
    "chat.update": 50,
    "reactions.add": 50,
    "reactions.remove": 20,
    "assistant.threads.setStatus": 50,
}


class CallBudget:
    """A token bucket per method (about 10 s of calls of burst); methods it does not know are not limited.

    `per_channel_per_minute` adds a bucket per (method, channel), e.g. chat.postMessage's ~1/s per channel.
    """

    def __init__(
        self,
        per_minute: Mapping[str, int],
        *,
        per_channel_per_minute: Mapping[str, int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._per_minute = dict(per_minute)
        self._per_channel = dict(per_channel_per_minute or {})
        self._rate_per_s: dict[str, float] = {}
        self._capacity: dict[str, int] = {}
        self._tokens: dict[str, float] = {}
        self._paused_until: dict[str, float] = {}
        for method, n in self._per_minute.items():
            self._add(method, n)
        self._clock = clock
        self._stamp = clock()
        self._lock = threading.Lock()

    def try_take(self, method: str, channel: str = "") -> bool:
        """Spend one call of `method` (in `channel`, when it has a per-channel bucket) if the budget has one now."""
        keys = [method] if method in self._per_minute else []
        if channel and method in self._per_channel:
            keys.append(f"{method}#{channel}")
        with self._lock:
            self._refill()
            for key in keys:
                if key not in self._rate_per_s:
                    self._add(key, self._per_channel[method])
            if any(self._clock() < self._paused_until[k] or self._tokens[k] < 1 for k in keys):
                return False
            for key in keys:
                self._tokens[key] -= 1
            return True

    def take(self, method: str, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for a call of `method`; False when none came (the caller may still go ahead)."""
        deadline = self._clock() + timeout_s
        while not self.try_take(method):
            if self._clock() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def pause(self, method: str, seconds: float) -> None:
        """Slack said 429: no call of `method` for `seconds`."""
        with self._lock:
            for key in [k for k in self._paused_until if k == method or k.startswith(f"{method}#")]:
                self._paused_until[key] = max(self._paused_until[key], self._clock() + seconds)
                self._tokens[key] = 0.0

    def _add(self, key: str, per_minute: int) -> None:
        self._rate_per_s[key] = max(per_minute, 1) / 60.0
        self._capacity[key] = max(per_minute // 6, 1)
        self._tokens[key] = float(self._capacity[key])
        self._paused_until[key] = float("-inf")

    def _refill(self) -> None:
        now = self._clock()
        elapsed, self._stamp = now - self._stamp, now
        for method, rate in self._rate_per_s.items():
            self._tokens[method] = min(self._tokens[method] + elapsed * rate, float(self._capacity[method]))


class RateLimitPause(RetryHandler):
    """A retry handler that never retries: it pauses the budget of a method that got 429 + Retry-After."""

    def __init__(self, budget: CallBudget) -> None:
        super().__init__(max_retry_count=0)
        self._budget = budget

    def can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        """Pause on 429; always False, so the next handler (RateLimitErrorRetryHandler) decides on the retry."""
        if response is not None and response.status_code == 429:
            seconds = retry_after_s(response.headers)
            log.info("slack 429 on %s: pausing it for %.0f s", method_from_url(request.url), seconds)
            self._budget.pause(method_from_url(request.url), seconds)
        return False


def retry_after_s(headers: Mapping[str, object], default_s: float = 1.0) -> float:
    """Retry-After in seconds from response headers (values may be lists, as slack-sdk keeps them)."""
    for name, value in headers.items():
        if name.lower() == "retry-after":
            raw = value[0] if isinstance(value, list) and value else value
            try:
                return max(float(str(raw)), 0.0)
            except ValueError:
                return default_s
    return default_s


def watch_rate_limits(client: WebClient, budget: CallBudget) -> WebClient:
    """Let `budget` hear every 429 the client gets (the watch goes first; it never retries)."""
    client.retry_handlers.insert(0, RateLimitPause(budget))
    return client
