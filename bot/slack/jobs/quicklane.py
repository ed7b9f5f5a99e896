"""The quick lane: the pool that takes every acked Slack request first (dedupe, access, the intent gate; help,
chit-chat and quick lookups are answered right there). Bolt's listener threads only hand work over to it.

On stop, requests Slack was already told we took get up to half the drain time. What is left after that is
never dropped in silence: a mention still waiting (or still being triaged) is answered in its thread
"restarting: re-run?", and from then on `closed` tells the runner not to queue it after all (the thread was
told). A retried delivery of a mention that was already handled is not told anything. Work without a thread
of its own (a button click, a slash command before its anchor exists) can only be logged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient

from bot.durable.runner import RESTARTING_TEXT
from bot.slack.delivery.marks import say, withdraw
from bot.slack.jobs.state import Dedupe, Job

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Acked:
    """The thread an acked request answers in, and its delivery's dedupe keys."""

    job: Job
    keys: tuple[str, ...] = ()


class QuickLane:
    """`workers` threads for acked requests; `stop` answers what it could not get to (see the module docstring)."""

    def __init__(self, client: WebClient, workers: int, dedupe: Dedupe) -> None:
        self._client, self._dedupe = client, dedupe
        self._pool = ThreadPoolExecutor(max(workers, 1), thread_name_prefix="opsbot-quick")
        self._lock = threading.Lock()
        self._pending: dict[Future[None], Acked | None] = {}  # acked, not handled yet
        self._closed = threading.Event()

    @property
    def closed(self) -> bool:
        """True once stop() has answered the late requests "restarting": queue nothing more."""
        return self._closed.is_set()

    def defer(self, work: Callable[..., Any], *args: Any, acked: Acked | None = None) -> None:
        """Run `work` on the lane; `acked` names the thread to answer if it cannot run before the stop."""
        try:
            future = self._pool.submit(logged, work, *args)
        except RuntimeError:  # the pool is shut down: opsbot is stopping
            log.warning("stopping: not starting %s", getattr(work, "__name__", work))
            if acked is not None:
                self._tell(acked, started=False)
            return
        with self._lock:
            self._pending[future] = acked
        future.add_done_callback(self._done)

    def stop(self, timeout_s: float) -> int:
        """Take nothing new; wait up to timeout_s for what was acked; answer what is left. Returns how many
        threads were told "restarting: re-run?"."""
        self._pool.shutdown(wait=False)  # nothing new; what was accepted still runs
        with self._lock:
            pending = list(self._pending)
        late = wait(pending, timeout=timeout_s).not_done
        self._closed.set()
        told = 0
        for future in late:
            with self._lock:
                acked = self._pending.get(future)
            started = not future.cancel()
            if acked is not None and self._tell(acked, started):
                told += 1
        if late:
            log.warning(
                "stopping: %d acked Slack request(s) on the quick lane not handled in time; %d answered "
                '"restarting: re-run?" in their threads, the rest (no thread of their own) only logged',
                len(late),
                told,
            )
        return told

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _tell(self, acked: Acked, started: bool) -> bool:
        if not started and acked.keys and not self._first_seen(acked.keys):
            return False  # a retried delivery of a mention handled already (here or on another replica)
        say(self._client, acked.job, f"♻️ {RESTARTING_TEXT}")
        withdraw(self._client, acked.job)
        return True

    def _first_seen(self, keys: Sequence[str]) -> bool:
        try:
            return self._dedupe.first_seen(keys)
        except Exception:  # Redis away: tell rather than drop in silence
            return True

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.pop(future, None)


def logged(work: Callable[..., Any], *args: Any) -> None:
    try:
        work(*args)
    except Exception:
        log.exception("slack work on the quick lane failed: %s", getattr(work, "__name__", work))
