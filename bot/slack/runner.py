"""opsbot's own pools for Slack work, in two lanes. Bolt's listener threads only hand over; they never wait.

The quick lane (`quick_workers` threads) takes every job first: dedupe, access, then the intent gate. Help,
chit-chat and quick lookups are answered right there, so they never queue behind diagnoses; an unsure intent gets
"🔎 Investigate" / "Just answer" buttons instead of a run. Diagnoses go to the WorkQueue, answered by `workers`
threads. The 👀, the status and the "queued" notice are posted on a third small pool, so no lane waits on Slack's
latency; a diagnosis starts once its marks are posted, and its "queued" notice becomes its progress message. The
position a notice gives is the job's true place in the queue at the moment it was queued.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Literal

from slack_sdk import WebClient

from bot.engine.types import Intent, Question, Responder, Trace, handed_back
from bot.safety.access import Admit
from bot.slack.budget import CallBudget
from bot.slack.marks import acknowledge, call_quietly, say, withdraw
from bot.slack.notices import ask_blocks, ask_text, chosen_text, queued_text
from bot.slack.reply import Persist, Replier
from bot.slack.restart import answer_queued_restarting
from bot.slack.state import Dedupe, Job, ThreadMemory, WorkQueue

log = logging.getLogger(__name__)

Classify = Callable[[str], Intent]
QUICK_ROUTES = frozenset({"help", "chitchat", "lookup", "act"})  # act: the canned read-only answer
MARKS_WAIT_S = 10.0  # a diagnosis waits at most this long for its 👀 and notice before it starts anyway
_PENDING_CHOICES = 500


@dataclass(frozen=True)
class Submission:
    outcome: Literal["started", "queued", "answered", "asked", "duplicate", "refused", "rejected"]
    position: int = 0


@dataclass(frozen=True)
class Lanes:
    """How many threads each pool has, and when the intent gate counts as unsure."""

    workers: int = 4  # diagnoses
    quick_workers: int = 8  # triage, help, chit-chat, quick lookups
    marks_workers: int = 16  # 👀, status, "queued" notices
    ask_below_confidence: float = 0.6


class Runner:
    """The quick lane, the diagnosis workers over a WorkQueue, and the pool that posts a job's marks."""

    def __init__(self, client: WebClient, responder: Responder, *, persist: Persist, queue: WorkQueue,
                 dedupe: Dedupe, memory: ThreadMemory, workers: int = 4, lanes: Lanes | None = None,
                 classify: Classify | None = None, budget: CallBudget | None = None, use_streaming: bool = True,
                 update_interval_s: float = 3.0, append_interval_s: float = 1.0, status_text: str = "Diagnosing…",
                 on_stream_fallback: Callable[[str], None] | None = None) -> None:
        self.client = client
        self._lanes = lanes or Lanes(workers=workers)
        self._replier = Replier(client, responder, persist=persist, memory=memory, use_streaming=use_streaming,
                                update_interval_s=update_interval_s, append_interval_s=append_interval_s,
                                status_text=status_text, on_stream_fallback=on_stream_fallback, budget=budget)
        self._queue, self._dedupe, self._classify = queue, dedupe, classify
        self._budget = budget or CallBudget({})
        self._workers = max(self._lanes.workers, 1)
        self._status_text = status_text
        self._active = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._inflight: set[tuple[str, str, str]] = set()
        self._marks_posted: dict[tuple[str, str, str], Future[str]] = {}
        self._choices: OrderedDict[str, Job] = OrderedDict()
        self._quick = ThreadPoolExecutor(max(self._lanes.quick_workers, 1), thread_name_prefix="opsbot-quick")
        self._marks = ThreadPoolExecutor(max(self._lanes.marks_workers, 1), thread_name_prefix="opsbot-marks")

    def start(self) -> None:
        """Start the diagnosis workers (idempotent)."""
        if self._threads:
            return
        self._stop.clear()
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
        self._quick.shutdown(wait=False, cancel_futures=True)
        self._marks.shutdown(wait=False, cancel_futures=True)

    @property
    def active(self) -> int:
        """Diagnoses running now."""
        return self._active

    @property
    def queued(self) -> int:
        """Diagnoses waiting for a worker."""
        return self._queue.depth()

    def recent_trace(self, trace_id: str) -> Trace | None:
        """A trace answered by this process (used when no TraceStore is configured)."""
        return self._replier.recent_trace(trace_id)

    def post_trace(self, channel: str, question: Question, trace: Trace) -> None:
        """Post a finished trace (e.g. an Alertmanager-triggered diagnosis): an anchor, the answer in its thread."""
        self._replier.post_trace(channel, question, trace)

    def defer(self, work: Callable[..., Any], *args: Any) -> None:
        """Run `work` on the quick lane (listeners hand over everything that touches the network)."""
        try:
            self._quick.submit(_logged, work, *args)
        except RuntimeError:  # the pool is shut down: opsbot is stopping
            log.warning("stopping: not starting %s", getattr(work, "__name__", work))

    def accept(self, job: Job, keys: Sequence[str] = (), admit: Admit | None = None) -> None:
        """Take a job without waiting: `submit` runs on the quick lane."""
        self.defer(self.submit, job, keys, admit)

    def first_delivery(self, keys: Sequence[str]) -> bool:
        """False when any of the keys was seen before (a retried delivery)."""
        return not keys or self._dedupe.first_seen(keys)

    def submit(self, job: Job, keys: Sequence[str] = (), admit: Admit | None = None) -> Submission:
        """Dedupe, admit, triage: answer a quick question now, ask when unsure, queue a diagnosis."""
        if keys and not self._dedupe.first_seen(keys):
            log.info("duplicate delivery ignored keys=%s", ",".join(keys))
            return Submission("duplicate")
        # After dedupe, so a retried delivery neither takes a second rate-limit slot nor a second refusal.
        if admit is not None and (refusal := admit(job.user, job.channel)):
            call_quietly(self.client, "chat_postEphemeral", channel=job.channel, user=job.user, text=f"⛔ {refusal}",
                         thread_ts=job.thread_ts)
            return Submission("refused")
        intent = self._triage(job.question)
        if intent is None:
            return self._enqueue(job)
        job = _with_intent(job, intent)
        if intent.tier == "default" or intent.confidence < self._lanes.ask_below_confidence:
            return self._ask(job)
        return self._answer_now(job) if intent.route in QUICK_ROUTES else self._enqueue(job)

    def choose(self, choice_id: str, investigate: bool, user: str, message_ts: str) -> Submission:
        """The asker's answer to "Investigate / Just answer"; "rejected" when the choice is no longer pending."""
        with self._lock:
            job = self._choices.pop(choice_id, None)
        if job is None:
            return Submission("rejected")
        call_quietly(self.client, "chat_update", channel=job.channel, ts=message_ts,
                     text=chosen_text(investigate, user), blocks=[])
        chosen = Intent("diagnose", 1.0, "rules", "the user chose Investigate") if investigate else \
            Intent("lookup", 1.0, "rules", "the user chose Just answer")
        job = _with_intent(job, chosen)
        return self._enqueue(job) if investigate else self._answer_now(job)

    def run(self, job: Job, marks: Future[str] | None = None) -> Trace:
        """Answer one job in its thread (workers call this; tests and the bench may call it directly)."""
        notice_ts = ""
        if marks is not None:
            try:
                notice_ts = marks.result(timeout=MARKS_WAIT_S)
            except Exception as exc:
                log.info("the job's marks were not posted in time channel=%s: %s", job.channel, exc)
        try:
            # Released once the trace is kept, before posting: asking again from then on is a new run.
            return self._replier.answer(job, on_answered=lambda: self._release(job), message_ts=notice_ts)
        finally:
            self._release(job)

    def _triage(self, question: Question) -> Intent | None:
        if self._classify is None or question.intent is not None:
            return question.intent
        try:
            return self._classify(question.text)
        except Exception:
            log.exception("the intent gate failed; asking the user")
            return Intent("diagnose", 0.0, "default", "classifier failed")

    def _answer_now(self, job: Job) -> Submission:
        quick = replace(job, react_ts="", question=replace(job.question, quick_only=True))  # plain: no reactions
        why = handed_back(self.run(quick))
        if not why:
            return Submission("answered")
        # A lookup that needs the full diagnosis goes to the diagnosis lane like any diagnosis: its queue place,
        # its notice, its marks, the main LLM slots; the quick lane stays free for help and lookups.
        log.info("a quick answer escalates to the full diagnosis channel=%s: %s", job.channel, why)
        escalated = Intent("diagnose", 1.0, "rules", f"escalated from a quick answer: {why}")
        return self._enqueue(replace(job, question=replace(job.question, intent=escalated, escalated=why)))

    def _ask(self, job: Job) -> Submission:
        choice_id = uuid.uuid4().hex
        with self._lock:
            self._choices[choice_id] = job
            while len(self._choices) > _PENDING_CHOICES:
                self._choices.popitem(last=False)
        call_quietly(self.client, "chat_postMessage", channel=job.channel, thread_ts=job.thread_ts,
                     text=ask_text(job.question.text), blocks=ask_blocks(job.question.text, choice_id))
        return Submission("asked")

    def _enqueue(self, job: Job) -> Submission:
        if not self._claim(job):
            say(self.client, job, "🔁 I'm already working on that question in this thread; the answer comes here.")
            return Submission("duplicate")
        with self._lock:  # the position, the put and the marks' future belong together
            position = self._queue.put(job)
            idle = max(self._workers - self._active, 0)  # the first `idle` jobs in the queue start at once
            place = position - idle if position is not None and position > idle else 0
            if position is not None:
                self._marks_posted[_inflight_key(job)] = self._marks.submit(self._mark, job, place)
        if position is None:
            self._release(job)
            log.warning("work queue full, refusing channel=%s thread=%s", job.channel, job.thread_ts)
            say(self.client, job, "🚦 opsbot is busy and its queue is full. Please ask again in a few minutes.")
            withdraw(self.client, job, self._budget)
            return Submission("rejected")
        return Submission("queued", place) if place else Submission("started", position)

    def _mark(self, job: Job, place: int) -> str:
        """👀 and the status; when the job waits (`place` in line), the "queued" notice, whose ts becomes the
        job's progress message."""
        acknowledge(self.client, job, self._status_text, self._budget)
        if not place or not self._budget.try_take("chat.postMessage", job.channel):
            return ""  # a burst in one channel: the notice is skipped, never the job
        try:
            response = self.client.chat_postMessage(channel=job.channel, thread_ts=job.thread_ts,
                                                    text=queued_text(place - 1, self._workers))
            return str(response.get("ts") or "")
        except Exception as exc:
            log.info("posting the queued notice failed channel=%s: %s", job.channel, exc)
            return ""

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
                marks = self._marks_posted.pop(_inflight_key(job), None)
            try:
                self.run(job, marks)
            except Exception:
                log.exception("worker failed channel=%s thread=%s", job.channel, job.thread_ts)
            finally:
                with self._lock:
                    self._active -= 1


def _with_intent(job: Job, intent: Intent) -> Job:
    return replace(job, question=replace(job.question, intent=intent))


def _logged(work: Callable[..., Any], *args: Any) -> None:
    try:
        work(*args)
    except Exception:
        log.exception("slack work on the quick lane failed: %s", getattr(work, "__name__", work))


def _inflight_key(job: Job) -> tuple[str, str, str]:
    return job.channel, job.thread_ts, " ".join(job.question.text.lower().split())
