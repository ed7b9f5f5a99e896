"""Who may start a diagnosis, where, and how often: one policy applied at every entry point.

A diagnosis costs LLM tokens and backend queries, so each user gets a sliding-window budget of runs per
minute, and a channel allowlist keeps the bot out of channels it was not meant for (slash commands work
in any conversation, so Slack membership alone is not a gate).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from bot.safety.ratelimit import MemoryWindow, RateWindow

RATE_LIMITED = "rate limit"  # every rate-limit refusal starts with this (HTTP surfaces answer 429 for it)

Admit = Callable[[str, str], str | None]


class AccessPolicy:
    """`admit(user, channel)` -> None when allowed, else the reason to tell the user. Thread-safe."""

    def __init__(
        self,
        allowed_channels: Iterable[str] = (),
        rate_limit_per_minute: int = 0,
        *,
        clock: Callable[[], float] = time.monotonic,
        window: RateWindow | None = None,
    ) -> None:
        self.allowed_channels = frozenset(c.strip() for c in allowed_channels if c.strip())
        self.rate_limit_per_minute = rate_limit_per_minute
        self._window = window if window is not None else MemoryWindow(clock=clock)

    def admit(self, user: str, channel: str) -> str | None:
        """Check the channel, then take one slot from the user's window (a refused run takes none)."""
        # No channel (an API call without one) is not a conversation: the allowlist gates conversations only.
        if self.allowed_channels and channel and channel not in self.allowed_channels:
            return "opsbot is not enabled in this channel. Ask in one of the incident channels it serves."
        if self.rate_limit_per_minute <= 0:
            return None
        return self._take_slot(user or "anonymous")

    def _take_slot(self, user: str) -> str | None:
        wait_s = self._window.take(user, self.rate_limit_per_minute)
        if wait_s is None:
            return None
        return (
            f"{RATE_LIMITED}: {self.rate_limit_per_minute} diagnoses per minute per user. "
            f"Try again in {max(1, round(wait_s))} s."
        )


def allow_all(user: str, channel: str) -> str | None:
    """The admit callable for surfaces that run without a policy (tests, the CLI)."""
    return None
