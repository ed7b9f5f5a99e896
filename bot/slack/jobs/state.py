"""Shared state of the Slack surface behind small Protocols: dedupe, thread memory, the work queue.

The in-memory implementations here serve one process. bot/slack/jobs/redisstate.py implements dedupe and thread
memory on Redis (SET NX EX for first_seen, a capped list per thread), so every replica sees the same; with Redis,
the work queue is the shared job stream (bot/slack/jobs/slackstream.py).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.engine.types import Question, Step, Trace
from bot.safety.outbound import plain_text
from tools.metrics.series import change_line, finding_lines
from tools.results import series_of

MIN_DEDUPE_TTL_S = 600.0  # Slack retries for about 5 minutes; keep entries at least 10


@dataclass(frozen=True)
class Job:
    """One question to answer in one Slack thread."""

    question: Question
    channel: str
    thread_ts: str
    react_ts: str = ""  # the message that gets the 👀 and ✅ reactions
    user: str = ""
    team: str = ""
    read_thread: bool = False  # called inside an existing thread: read its earlier messages for context


class Dedupe(Protocol):
    def first_seen(self, keys: Sequence[str]) -> bool:
        """True (and remember every key) when none of the keys was seen within the TTL."""
        ...


class ThreadMemory(Protocol):
    def recall(self, channel: str, thread_ts: str) -> tuple[str, ...]:
        """Compressed earlier turns of this thread, oldest first."""
        ...

    def remember(self, channel: str, thread_ts: str, trace: Trace) -> None:
        """Add a finished turn to the thread."""
        ...


class WorkQueue(Protocol):
    def put(self, job: Job) -> int | None:
        """Enqueue; the job's 1-based position, or None when the queue is full."""
        ...

    def get(self, timeout_s: float) -> Job | None:
        """The next job, or None after timeout_s."""
        ...

    def depth(self) -> int:
        """Jobs waiting (not yet picked up by a worker)."""
        ...


class MemoryDedupe:
    """TTL set in a dict; old entries are swept on every call."""

    def __init__(self, ttl_s: float = 900.0, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = max(ttl_s, MIN_DEDUPE_TTL_S)
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def first_seen(self, keys: Sequence[str]) -> bool:
        now = self._clock()
        with self._lock:
            while self._seen and next(iter(self._seen.values())) <= now:
                self._seen.popitem(last=False)
            if any(key in self._seen for key in keys):
                return False
            for key in keys:
                self._seen[key] = now + self.ttl_s
            return True


def trace_to_memory(trace: Trace, max_chars: int = 700) -> str:
    """One compressed turn: question, answer and the key observations (change points first).

    Kept (in Redis, with several replicas) and sent to the model with the thread's next question: it leaves
    through the outbound pass, so a secret the model wrote in its answer is not kept or sent back."""
    key_lines = observed(trace.steps)[:4]
    answer = " ".join(trace.answer.split())[:400]
    turn = f"Q: {' '.join(trace.question.split())[:200]} → A: {answer}"
    if key_lines:
        turn += " | observed: " + "; ".join(key_lines)
    return plain_text(turn[:max_chars])


def observed(steps: Sequence[Step]) -> list[str]:
    """What the metrics showed, as their text prints it: every change point first, then the spikes, trends,
    sawtooths and stops (read from each step's series; a step without one shows none)."""
    read = [series for step in steps if (series := series_of(step)) is not None]
    changes = [change_line(c, s.unit, s.window.clock_format) for s in read for c in s.changes]
    return [*changes, *(line for s in read for line in finding_lines(s)[len(s.changes) :])]


class MemoryThreadMemory:
    """The last `max_turns` turns of up to `max_threads` recently used threads."""

    def __init__(self, *, max_turns: int = 4, max_threads: int = 2_000) -> None:
        self.max_turns = max_turns
        self.max_threads = max_threads
        self._threads: OrderedDict[tuple[str, str], deque[str]] = OrderedDict()
        self._lock = threading.Lock()

    def recall(self, channel: str, thread_ts: str) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._threads.get((channel, thread_ts), ()))

    def remember(self, channel: str, thread_ts: str, trace: Trace) -> None:
        with self._lock:
            turns = self._threads.pop((channel, thread_ts), deque(maxlen=self.max_turns))
            turns.append(trace_to_memory(trace))
            self._threads[(channel, thread_ts)] = turns
            while len(self._threads) > self.max_threads:
                self._threads.popitem(last=False)


class MemoryWorkQueue:
    """A bounded FIFO in process memory."""

    def __init__(self, maxsize: int) -> None:
        self._queue: queue.Queue[Job] = queue.Queue(maxsize=max(maxsize, 1))
        self._lock = threading.Lock()

    def put(self, job: Job) -> int | None:
        with self._lock:  # the position must match this put, not a concurrent one
            try:
                self._queue.put_nowait(job)
            except queue.Full:
                return None
            return self._queue.qsize()

    def get(self, timeout_s: float) -> Job | None:
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def depth(self) -> int:
        return self._queue.qsize()
