"""opsbot's own worker pool for Slack work. Bolt's listener threads only enqueue; they never run a diagnosis.

A submitted job is deduplicated (event_id, client_msg_id, channel+ts; entries live >= 10 minutes), gets a 👀
reaction and a "Diagnosing…" status at once, and waits in a bounded queue. When every worker is busy the thread
is told "busy, queued as #n"; when the queue is full the user is told so: nothing is dropped silently. A worker
hands each job to the Replier (bot/slack/reply.py), which runs the agent and posts the answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from slack_sdk import WebClient

from bot.engine.types import Question, Responder, Trace
from bot.safety.access import Admit
from bot.slack.marks import acknowledge, call_quietly, say, withdraw
from bot.slack.reply import Persist, Replier
from bot.slack.restart import answer_queued_restarting
from bot.slack.state import Dedupe, Job, ThreadMemory, WorkQueue

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Submission:
    outcome: Literal["started", "queued", "duplicate", "refused", "rejected"]
    position: int = 0


class Runner:
    """A fixed pool of worker threads answering Jobs from a WorkQueue."""

    def __init__(
        self,
        client: WebClient,
        responder: Responder,
        *,
        persist: Persist,
        queue: WorkQueue,
        dedupe: Dedupe,
        memory: ThreadMemory,
        workers: int = 4,
        use_streaming: bool = True,
        update_interval_s: float = 3.0,
        status_text: str = "Diagnosing…",
        on_stream_fallback: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self._replier = Replier(client, responder, persist=persist, memory=memory, use_streaming=use_streaming,
                                update_interval_s=update_interval_s, status_text=status_text,
                                on_stream_fallback=on_stream_fallback)
        self._queue = queue
        self._dedupe = dedupe
        self._workers = max(workers, 1)
        self._status_text = status_text
        self._active = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._inflight: set[tuple[str, str, str]] = set()

    def start(self) -> None:
        """Start the worker threads (idempotent)."""
        if self._threads:
            return
        for n in range(self._workers):
            thread = threading.Thread(target=self._work, name=f"opsbot-worker-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop taking jobs and give running ones up to `timeout_s` (in total) to finish and post."""
        self._stop.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        answer_queued_restarting(self.client, self._queue)
        if self._active:
            log.warning("stopping with %d diagnoses still running past the deadline", self._active)
        self._threads = []

    @property
    def active(self) -> int:
        """Jobs running now."""
        return self._active

    @property
    def queued(self) -> int:
        """Jobs waiting for a worker."""
        return self._queue.depth()

    def recent_trace(self, trace_id: str) -> Trace | None:
        """A trace answered by this process (used when no TraceStore is configured)."""
        return self._replier.recent_trace(trace_id)

    def post_trace(self, channel: str, question: Question, trace: Trace) -> None:
        """Post a finished trace (e.g. an Alertmanager-triggered diagnosis): an anchor, the answer in its thread."""
        self._replier.post_trace(channel, question, trace)

    def submit(self, job: Job, keys: Sequence[str] = (), admit: Admit | None = None) -> Submission:
        """Queue a job unless it is a duplicate delivery or `admit` refuses it; tell the thread when it waits."""
        if keys and not self._dedupe.first_seen(keys):
            log.info("duplicate delivery ignored keys=%s", ",".join(keys))
            return Submission("duplicate")
        # After dedupe, so a retried delivery neither takes a second rate-limit slot nor a second refusal.
        if admit is not None and (refusal := admit(job.user, job.channel)):
            call_quietly(self.client, "chat_postEphemeral", channel=job.channel, user=job.user, text=f"⛔ {refusal}",
                         thread_ts=job.thread_ts)
            return Submission("refused")
        if not self._claim(job):
            say(self.client, job,
                "🔁 I'm already working on that question in this thread; the answer will appear here.")
            return Submission("duplicate")
        # Before the put: a fast worker must not conclude before the 👀 appears.
        acknowledge(self.client, job, self._status_text)
        with self._lock:
            busy = self._active >= self._workers or self._queue.depth() > 0
            position = self._queue.put(job)
        if position is None:
            self._release(job)
            log.warning("work queue full, refusing channel=%s thread=%s", job.channel, job.thread_ts)
            say(self.client, job, "🚦 opsbot is busy and its queue is full. Please ask again in a few minutes.")
            withdraw(self.client, job)
            return Submission("rejected")
        if busy:
            say(self.client, job, f"⏳ busy, queued as #{position}. I'll answer here when a worker is free.")
            return Submission("queued", position)
        return Submission("started", position)

    def run(self, job: Job) -> Trace:
        """Answer one job in its thread (workers call this; tests and the bench may call it directly)."""
        try:
            # Released once the trace is kept, before posting: asking again from then on is a new run.
            return self._replier.answer(job, on_answered=lambda: self._release(job))
        finally:
            self._release(job)

    def _claim(self, job: Job) -> bool:
        # At most one run per (thread, question): an impatient repeat or a double-clicked Re-run is not a new run.
        with self._lock:
            if _inflight_key(job) in self._inflight:
                return False
            self._inflight.add(_inflight_key(job))
            return True

    def _release(self, job: Job) -> None:
        with self._lock:
            self._inflight.discard(_inflight_key(job))

    def _work(self) -> None:
        while not self._stop.is_set():
            job = self._queue.get(timeout_s=0.2)
            if job is None:
                continue
            with self._lock:
                self._active += 1
            try:
                self.run(job)
            except Exception:
                log.exception("worker failed channel=%s thread=%s", job.channel, job.thread_ts)
            finally:
                with self._lock:
                    self._active -= 1


def _inflight_key(job: Job) -> tuple[str, str, str]:
    return job.channel, job.thread_ts, " ".join(job.question.text.lower().split())
