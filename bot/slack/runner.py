"""opsbot's own worker pool for Slack work. Bolt's listener threads only enqueue; they never run a diagnosis.

A submitted job is deduplicated (event_id, client_msg_id, channel+ts; entries live >= 10 minutes), gets a 👀
reaction and a "Diagnosing…" status at once, and waits in a bounded queue. When every worker is busy the thread
is told "busy, queued as #n"; when the queue is full the user is told so: nothing is dropped silently. Each
finished trace is handed to `persist` BEFORE anything is posted, so a failed post never loses it.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

from slack_sdk import WebClient

from bot.engine.types import Question, StepObserver, StopReason, Totals, Trace
from bot.slack.events import thread_context_from_replies
from bot.slack.progress import ThreadProgress
from bot.slack.render import mrkdwn_escape, trim
from bot.slack.state import Dedupe, Job, ThreadMemory, WorkQueue

log = logging.getLogger(__name__)

Responder = Callable[[Question, StepObserver | None], Trace]
Persist = Callable[[Trace], None]
Admit = Callable[[str, str], str | None]  # (user, channel) -> None when allowed, else the reason


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
        self._responder = responder
        self._persist = persist
        self._queue = queue
        self._dedupe = dedupe
        self._memory = memory
        self._workers = max(workers, 1)
        self._use_streaming = use_streaming
        self._update_interval_s = update_interval_s
        self._status_text = status_text
        self._on_stream_fallback = on_stream_fallback
        self._active = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._recent: OrderedDict[str, Trace] = OrderedDict()
        self._own_user_id: str | None = None
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
        if self._active or self._queue.depth():
            log.warning("stopping with %d diagnoses running and %d queued; they are not answered",
                        self._active, self._queue.depth())
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
        return self._recent.get(trace_id)

    def submit(self, job: Job, keys: Sequence[str] = (), admit: Admit | None = None) -> Submission:
        """Queue a job unless it is a duplicate delivery or `admit` refuses it; tell the thread when it waits."""
        if keys and not self._dedupe.first_seen(keys):
            log.info("duplicate delivery ignored keys=%s", ",".join(keys))
            return Submission("duplicate")
        # After dedupe, so a retried delivery neither takes a second rate-limit slot nor a second refusal.
        if admit is not None and (refusal := admit(job.user, job.channel)):
            self._call("chat_postEphemeral", channel=job.channel, user=job.user, text=f"⛔ {refusal}",
                       thread_ts=job.thread_ts)
            return Submission("refused")
        if not self._claim(job):
            self._say(job, "🔁 I'm already working on that question in this thread; the answer will appear here.")
            return Submission("duplicate")
        self._acknowledge(job)  # before the put: a fast worker must not conclude before the 👀 appears
        with self._lock:
            busy = self._active >= self._workers or self._queue.depth() > 0
            position = self._queue.put(job)
        if position is None:
            self._release(job)
            log.warning("work queue full, refusing channel=%s thread=%s", job.channel, job.thread_ts)
            self._say(job, "🚦 opsbot is busy and its queue is full. Please ask again in a few minutes.")
            self._withdraw(job)
            return Submission("rejected")
        if busy:
            self._say(job, f"⏳ busy, queued as #{position}. I'll answer here when a worker is free.")
            return Submission("queued", position)
        return Submission("started", position)

    def run(self, job: Job) -> Trace:
        """Answer one job in its thread (workers call this; tests and the bench may call it directly)."""
        try:
            return self._answer(job)
        finally:
            self._release(job)

    def _answer(self, job: Job) -> Trace:
        progress = ThreadProgress(self.client, job, use_streaming=self._use_streaming,
                                  update_interval_s=self._update_interval_s, status_text=self._status_text,
                                  on_stream_fallback=self._on_stream_fallback)
        progress.set_status()  # again: the job may have waited in the queue past Slack's 2-minute status expiry
        question = replace(job.question, history=self._history(job))
        try:
            trace = self._responder(question, progress.on_step)
        except Exception as exc:  # the one catch for this surface: the user still gets an answer
            log.exception("responder failed channel=%s thread=%s", job.channel, job.thread_ts)
            trace = internal_error_trace(question, exc)
        self._keep(trace)
        self._remember_turn(job, trace)
        self._release(job)  # answered: asking again from now on is a new run
        delivered = False
        try:
            delivered = progress.finish(trace)
        finally:
            self._conclude(job, trace, delivered)
        return trace

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

    def _remember_turn(self, job: Job, trace: Trace) -> None:
        try:  # before the post, so a quick follow-up in the thread already sees this turn
            self._memory.remember(job.channel, job.thread_ts, trace)
        except Exception:
            log.exception("thread memory failed trace_id=%s", trace.trace_id)

    def post_trace(self, channel: str, question: Question, trace: Trace) -> None:
        """Post a finished trace (e.g. an Alertmanager-triggered diagnosis): an anchor, the answer in its thread."""
        anchor = self.client.chat_postMessage(channel=channel, text=f"🚨 {mrkdwn_escape(trim(question.text, 2_000))}")
        thread_ts = str(anchor["ts"])
        job = Job(replace(question, channel=channel, thread_ts=thread_ts), channel, thread_ts)
        self._remember_recent(trace)  # the caller (the API's dispatcher) has stored it already
        self._memory.remember(channel, thread_ts, trace)  # a follow-up @mention in that thread has the context
        if not ThreadProgress(self.client, job, use_streaming=False).finish(trace):
            raise RuntimeError(f"could not post trace {trace.trace_id} to {channel}")

    def _history(self, job: Job) -> tuple[str, ...]:
        remembered = self._memory.recall(job.channel, job.thread_ts)
        if remembered or not job.read_thread:
            return remembered
        try:  # a thread opsbot has not answered in yet (e.g. an alert's): its messages are the context
            replies = self.client.conversations_replies(channel=job.channel, ts=job.thread_ts, limit=50)
            return thread_context_from_replies(replies.get("messages") or [], current_ts=job.react_ts,
                                               bot_user_id=self._bot_user_id())
        except Exception as exc:
            log.info("reading thread context failed channel=%s thread=%s: %s", job.channel, job.thread_ts, exc)
            return ()

    def _bot_user_id(self) -> str:
        if self._own_user_id is None:
            self._own_user_id = str(self.client.auth_test().get("user_id") or "")
        return self._own_user_id

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

    def _keep(self, trace: Trace) -> None:
        try:
            self._persist(trace)  # before any post: a failed post must never lose the trace
        except Exception:
            log.exception("persisting the trace failed trace_id=%s", trace.trace_id)
        self._remember_recent(trace)

    def _remember_recent(self, trace: Trace) -> None:
        with self._lock:
            self._recent[trace.trace_id] = trace
            while len(self._recent) > 500:
                self._recent.popitem(last=False)

    def _acknowledge(self, job: Job) -> None:
        if job.react_ts:
            self._call("reactions_add", channel=job.channel, timestamp=job.react_ts, name="eyes")
        self._call("assistant_threads_setStatus", channel_id=job.channel, thread_ts=job.thread_ts,
                   status=self._status_text)

    def _withdraw(self, job: Job) -> None:
        """Undo the acknowledgement of a job that will not run: no status, and 🚦 instead of 👀."""
        self._call("assistant_threads_setStatus", channel_id=job.channel, thread_ts=job.thread_ts, status="")
        if job.react_ts:
            self._call("reactions_remove", channel=job.channel, timestamp=job.react_ts, name="eyes")
            self._call("reactions_add", channel=job.channel, timestamp=job.react_ts, name="vertical_traffic_light")

    def _conclude(self, job: Job, trace: Trace, delivered: bool) -> None:
        # Posting clears the status; clear it explicitly too, so an error path never leaves "Diagnosing…".
        self._call("assistant_threads_setStatus", channel_id=job.channel, thread_ts=job.thread_ts, status="")
        if job.react_ts:
            emoji = "white_check_mark" if trace.complete and delivered else "warning"
            self._call("reactions_add", channel=job.channel, timestamp=job.react_ts, name=emoji)
        log.info("answered trace_id=%s channel=%s steps=%d tokens=%d ms=%d delivered=%s", trace.trace_id,
                 job.channel, trace.totals.steps, trace.totals.tokens, trace.totals.elapsed_ms, delivered)

    def _say(self, job: Job, text: str) -> None:
        self._call("chat_postMessage", channel=job.channel, thread_ts=job.thread_ts, text=text)

    def _call(self, method: str, **kwargs: object) -> None:
        # Reactions and status are cosmetic: a failure (already_reacted, missing scope) must not stop the run.
        try:
            getattr(self.client, method)(**kwargs)
        except Exception as exc:
            log.info("slack %s failed channel=%s: %s", method, kwargs.get("channel") or kwargs.get("channel_id"), exc)


def _inflight_key(job: Job) -> tuple[str, str, str]:
    return job.channel, job.thread_ts, " ".join(job.question.text.lower().split())


def internal_error_trace(question: Question, exc: Exception) -> Trace:
    """A labelled answer for a failure nobody anticipated; the details go to the log, not the user."""
    return Trace(
        trace_id=uuid.uuid4().hex[:12],
        question=question.text,
        protocol="single",
        steps=(),
        answer="Sorry, opsbot hit an internal error and could not answer. The error is logged; please try again.",
        complete=False,
        stop_reason=StopReason.FINISH,  # no stop reason fits; complete=False and the note label it
        totals=Totals(),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        notes=(f"internal error: {type(exc).__name__}",),
    )
