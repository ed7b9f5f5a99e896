"""The attempts of one LLM call: each one counted and noted, and none of them past the call's deadline.

The openai SDK retries a call itself (`max_retries`): 408, 409, 429 and 5xx answers, timeouts and failed
connections, after its exponential backoff or after the wait the server asks for (`retry-after-ms`,
`Retry-After`). opsbot keeps all of that and adds what the SDK cannot know, the run's deadline, through two httpx
event hooks on the client the SDK is given (`before_attempt`, `after_response`):
- before each attempt, its timeout is cut to the time left (httpx's "timeout" request extension) and a retry
  with less than `min_attempt_s` left is refused; the transport is asked to report a failed connect or read
  (httpx's "trace" extension), so a timed-out attempt is told from a refused connection;
- after an error answer, the attempt is counted, and a retry whose wait would leave less than `min_attempt_s`
  is refused at once instead of being slept through.
A refusal is raised from the hook as AttemptRefused. The SDK retries only its own and httpx's errors and lets any
other exception through, so the call fails at once and says why.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2

# Called with the kind of every failed attempt: rate_limited, server_error, timeout, connection, auth,
# bad_request, bad_reply (a 200 with no usable completion) or other.
ErrorObserver = Callable[[str], None]

# The SDK's retry timing (openai/_constants.py; tests/engine/test_llm_retries.py checks them against the installed
# SDK): the backoff before retry n is at most 0.5 s * 2**(n-1), capped at 8 s, and a Retry-After longer than
# 120 s is not retried at all.
SDK_INITIAL_RETRY_DELAY_S = 0.5
SDK_MAX_RETRY_DELAY_S = 8.0
SDK_MAX_RETRY_AFTER_S = 120.0
_RETRIED_STATUSES = (408, 409, 429)  # and every 5xx
_TIMEOUT_KEYS = ("connect", "read", "write", "pool")


class AttemptRefused(Exception):
    """A retry that does not fit in the call's deadline. Raised from a hook, it ends the call at once."""


@dataclass
class Attempt:
    number: int
    failure: str = ""  # what went wrong, e.g. "HTTP 429 (rate_limited)", "ReadTimeout (timeout)"
    transport_error: tuple[str, str] | None = None  # (kind, exception name) the transport reported
    ended: float = 0.0  # when it failed (monotonic), 0 while unknown
    redirected: bool = False  # answered with a redirect that httpx follows: the next request is this attempt


_running: ContextVar[CallAttempts | None] = ContextVar("opsbot_llm_call", default=None)


def before_attempt(request: httpx2.Request) -> None:
    """httpx request hook: the call running in this thread (if any) sees the attempt before it is sent."""
    call = _running.get()
    if call is not None:
        call.before_attempt(request)


def after_response(response: httpx2.Response) -> None:
    """httpx response hook: the call running in this thread (if any) sees the attempt's answer."""
    call = _running.get()
    if call is not None:
        call.after_response(response)


class CallAttempts:
    """One call's attempts: the deadline they share, what each one failed with, a note per failed attempt."""

    def __init__(
        self, *, timeout_s: float | None, max_retries: int, min_attempt_s: float, report: ErrorObserver
    ) -> None:
        # a call always gets one attempt of at least min_attempt_s, however late it starts
        self.deadline = None if timeout_s is None else time.monotonic() + max(timeout_s, min_attempt_s)
        self.max_retries = max_retries
        self.min_attempt_s = min_attempt_s
        self._report = report
        self.attempts: list[Attempt] = []
        self.notes: list[str] = []

    @contextmanager
    def running(self) -> Iterator[CallAttempts]:
        """Make this the call the hooks report to, in this thread, while the SDK sends it."""
        token = _running.set(self)
        try:
            yield self
        finally:
            _running.reset(token)

    def before_attempt(self, request: httpx2.Request) -> None:
        now = time.monotonic()
        previous = self.attempts[-1] if self.attempts else None
        if previous is not None and previous.redirected:
            previous.redirected = False  # the same attempt, following a redirect
        else:
            if previous is not None:
                self._retrying(previous, now)
            self.attempts.append(Attempt(len(self.attempts) + 1))
        left = self._left_s(now)
        if left is not None:
            cap = self._attempt_timeout_s(self.attempts[-1].number, left)
            given = request.extensions.get("timeout") or dict.fromkeys(_TIMEOUT_KEYS)
            request.extensions["timeout"] = {k: cap if v is None else min(v, cap) for k, v in given.items()}
        request.extensions["trace"] = self._on_transport_event

    def after_response(self, response: httpx2.Response) -> None:
        attempt = self.attempts[-1]
        if response.has_redirect_location:
            attempt.redirected = True
            return
        if response.status_code < 400:
            return
        kind = error_kind_from_status(response.status_code)
        self._failed(attempt, kind, f"HTTP {response.status_code}")
        if sdk_retries(response.status_code, response.headers, self.max_retries - attempt.number + 1):
            self._refuse_a_wait_past_the_deadline(attempt, response.headers)

    def gave_up(self, kind: str, what: str) -> None:
        """The SDK raised after the last attempt: counted here unless a hook already did, and noted."""
        attempt = self.attempts[-1] if self.attempts else self._first_attempt()
        if not attempt.failure:  # the SDK's kind; the transport's name for it, when it said, is the more exact
            self._failed(attempt, kind, attempt.transport_error[1] if attempt.transport_error else what)
        spent = attempt.number > self.max_retries
        why = f"no retries left (max_retries {self.max_retries})" if spent else "the SDK does not retry it"
        self.notes.append(f"LLM attempt {attempt.number} failed: {attempt.failure}; {why}")

    def bad_reply(self, detail: str) -> None:
        """The last attempt was answered 200 with no usable completion (garbage, truncated, no choices)."""
        attempt = self.attempts[-1] if self.attempts else self._first_attempt()
        self._failed(attempt, "bad_reply", f"unreadable reply: {detail}")
        self.notes.append(f"LLM attempt {attempt.number} failed: {attempt.failure}; a 200 answer is not retried")

    def _retrying(self, previous: Attempt, now: float) -> None:
        """The SDK is retrying, so `previous` failed: count it (a transport failure only now), refuse or note it."""
        if not previous.failure:
            kind, name = previous.transport_error or ("connection", "no response")
            self._failed(previous, kind, name)
        left = self._left_s(now)
        if left is not None and left < self.min_attempt_s:
            self._refuse(previous, f"only {left:.1f} s of the run's time budget is left, too little for an attempt")
        waited = f" after {now - previous.ended:.1f} s" if previous.ended else ""
        self.notes.append(f"LLM attempt {previous.number} failed: {previous.failure}; retried{waited}")

    def _refuse_a_wait_past_the_deadline(self, attempt: Attempt, headers: Mapping[str, str]) -> None:
        asked_s = retry_after_s(headers)
        if asked_s is not None and 0 < asked_s <= SDK_MAX_RETRY_AFTER_S:
            wait_s, why = asked_s, f"the server asked for a {asked_s:.1f} s wait (Retry-After)"
        else:
            wait_s = backoff_bound_s(attempt.number)
            why = f"the SDK's backoff ({wait_s:.1f} s) and an attempt do not fit"
        left = self._left_s(attempt.ended)
        if left is not None and wait_s + self.min_attempt_s > left:
            self._refuse(attempt, f"{why}, and only {left:.1f} s of the run's time budget is left")

    def _refuse(self, attempt: Attempt, why: str) -> None:
        note = f"LLM attempt {attempt.number} failed: {attempt.failure}; not retried: {why}"
        self.notes.append(note)
        raise AttemptRefused(note.removeprefix("LLM "))

    def _failed(self, attempt: Attempt, kind: str, what: str) -> None:
        attempt.failure = f"{what} ({kind})"
        attempt.ended = attempt.ended or time.monotonic()
        self._report(kind)

    def _on_transport_event(self, name: str, info: Mapping[str, Any]) -> None:
        """httpx's "trace" extension: the first failed connect, write or read of the attempt, kept until the SDK
        shows (by retrying or raising) that the attempt failed."""
        attempt = self.attempts[-1]
        if name.endswith(".failed") and attempt.transport_error is None:
            error = info.get("exception")
            attempt.transport_error = ("timeout" if _is_timeout(error) else "connection", type(error).__name__)
            attempt.ended = time.monotonic()

    def _attempt_timeout_s(self, number: int, left_s: float) -> float:
        """The time left, less the SDK's longest backoff before the next attempt (when there is one), so that a
        timed-out attempt and that backoff still end by the deadline; never under `min_attempt_s` while that is
        left."""
        reserve_s = backoff_bound_s(number) if number <= self.max_retries else 0.0
        return max(min(left_s, self.min_attempt_s), left_s - reserve_s)

    def _left_s(self, now: float) -> float | None:
        return None if self.deadline is None else self.deadline - now

    def _first_attempt(self) -> Attempt:
        self.attempts.append(Attempt(1))
        return self.attempts[-1]


def failed_attempt_notes(outcome: object) -> tuple[str, ...]:
    """The notes of a call's failed attempts, from its reply or its LLMUnavailable (none from other exceptions)."""
    return tuple(getattr(outcome, "failed_attempts", ()))


def sdk_retries(status: int, headers: Mapping[str, str], retries_left: int) -> bool:
    """Whether the SDK retries this answer: its own rule (x-should-retry first, then 408, 409, 429, 5xx)."""
    asked_s = retry_after_s(headers)
    if retries_left <= 0 or (asked_s is not None and math.isfinite(asked_s) and asked_s > SDK_MAX_RETRY_AFTER_S):
        return False
    flag = headers.get("x-should-retry")
    if flag in ("true", "false"):
        return flag == "true"
    return status in _RETRIED_STATUSES or status >= 500


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The wait the server asks for, read as the SDK reads it: retry-after-ms, Retry-After seconds, or a date."""
    for name, per_second in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / per_second
        except ValueError:
            continue
    return _seconds_until(headers.get("retry-after"))


def backoff_bound_s(failed_attempt: int) -> float:
    """The longest backoff the SDK sleeps after attempt `failed_attempt` (its jitter only shortens it)."""
    return min(SDK_INITIAL_RETRY_DELAY_S * 2.0 ** (failed_attempt - 1), SDK_MAX_RETRY_DELAY_S)


def error_kind_from_status(status: int) -> str:
    """The error kind of an HTTP status from the LLM endpoint (the label opsbot_llm_errors_total uses)."""
    if status == 429:
        return "rate_limited"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "server_error"
    if status in (401, 403):
        return "auth"  # a revoked or wrong key: no retry will help, someone has to act
    return "bad_request" if status >= 400 else "other"


def _seconds_until(value: str | None) -> float | None:
    if not value:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return moment.timestamp() - time.time()


def _is_timeout(error: object) -> bool:
    """A connect, read, write or pool timeout of the transport (httpcore's TimeoutException family)."""
    return isinstance(error, TimeoutError) or any(c.__name__ == "TimeoutException" for c in type(error).__mro__)
