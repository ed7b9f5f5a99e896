"""Shared state of the Slack surface behind small Protocols: dedupe and thread memory; the Job and its wire form.

The in-memory implementations here serve one process. bot/slack/jobs/redisstate.py implements dedupe and thread
memory on Redis (SET NX EX for first_seen, a capped list per thread), so every replica sees the same. Where jobs
wait is the job runner's (bot/durable/runner.py): a job travels there as `job_to_payload`'s plain dict.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from bot.engine.types import Intent, Question, Step, Trace
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


def job_to_payload(job: Job) -> dict[str, Any]:
    """A job as the job runner keeps it (JSON-ready), for whichever replica runs it."""
    return asdict(job)


def job_from_payload(data: Mapping[str, Any]) -> Job:
    q = data["question"]
    question = Question(
        text=str(q["text"]),
        user=str(q.get("user", "")),
        channel=str(q.get("channel", "")),
        thread_ts=str(q.get("thread_ts", "")),
        source=str(q.get("source", "slack")),
        history=tuple(q.get("history", ())),
        intent=Intent(**q["intent"]) if q.get("intent") else None,
        escalated=str(q.get("escalated", "")),
    )
    return Job(
        question,
        str(data["channel"]),
        str(data["thread_ts"]),
        react_ts=str(data.get("react_ts", "")),
        user=str(data.get("user", "")),
        team=str(data.get("team", "")),
        read_thread=bool(data.get("read_thread")),
    )
