"""Answering one job in its Slack thread: the thread's context in, the agent's run, the trace kept, the answer out.

Each finished trace is handed to `persist` BEFORE anything is posted, so a failed post never loses it. A failure
of the agent itself is caught here, the one place for this surface, and the user still gets a labelled answer.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

from slack_sdk import WebClient

from bot.durable.attempt import Attempt
from bot.engine.types import (
    Question,
    Responder,
    Step,
    StepObserver,
    Trace,
    handed_back,
    internal_error_trace,
    new_trace_id,
)
from bot.safety.outbound import anchor_quote
from bot.slack.delivery.marks import conclude
from bot.slack.delivery.progress import MessageOwner, ProgressOptions, ThreadProgress
from bot.slack.intake.events import thread_context_from_replies
from bot.slack.jobs.state import Job, ThreadMemory
from bot.slack.jobs.steplog import StepLog

log = logging.getLogger(__name__)

Persist = Callable[[Trace], None]

_RECENT_TRACES = 500  # kept in process so Re-run and Show trace work when no TraceStore is configured


class Replier:
    """Runs the agent for one job at a time (on the calling worker) and delivers the answer to its thread."""

    def __init__(
        self,
        client: WebClient,
        responder: Responder,
        *,
        persist: Persist,
        memory: ThreadMemory,
        progress: ProgressOptions | None = None,
        steps: StepLog | None = None,
    ) -> None:
        self._client, self._responder, self._persist, self._memory = client, responder, persist, memory
        self._progress = progress or ProgressOptions()
        self._steps = steps
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, Trace] = OrderedDict()
        self._own_user_id: str | None = None

    def recent_trace(self, trace_id: str) -> Trace | None:
        """A trace answered by this process (used when no TraceStore is configured)."""
        return self._recent.get(trace_id)

    def answer(
        self,
        job: Job,
        on_answered: Callable[[], None],
        message_ts: str = "",
        owner: MessageOwner | None = None,
        attempt: Attempt | None = None,
    ) -> Trace:
        """Run the agent for the job, keep the trace, then post it; `on_answered` runs between the two.

        `message_ts` is the job's "queued" notice, which becomes its progress message. A queued diagnosis comes with
        its `attempt` at the job (bot/durable/attempt.py): the run's trace id is the job's, each step is kept where a
        takeover finds it, and an attempt that takes over goes on from the steps found before (shown first in the
        progress message). With `owner`, only the current attempt writes to the thread.
        """
        earlier = attempt.earlier_steps if attempt is not None else ()
        progress = ThreadProgress(
            self._client, job, self._progress, message_ts=message_ts, owner=owner, earlier=earlier
        )
        quick = job.question.intent is not None and job.question.intent.route in ("help", "chitchat", "act")
        if message_ts:  # it waited in the queue, maybe past Slack's 2-minute status expiry: set it again
            progress.set_status()
            progress.begin()
        question = replace(job.question, history=self._history(job))
        question = attempt.question(question) if attempt is not None else question
        trace_id = attempt.job_id if attempt is not None else ""
        on_step, trace_id = self._observer(question, progress.on_step, trace_id, earlier)
        if attempt is not None:
            on_step = attempt.observer(on_step)
        trace = self._run(job, question, on_step)
        trace = replace(trace, trace_id=trace_id) if trace_id else trace
        trace = attempt.continued(trace) if attempt is not None else trace
        if handed_back(trace):  # a quick answer that needs the full diagnosis: the runner queues it, nothing posts
            self._hand_over(trace, progress)
            return trace
        if attempt is not None and not attempt.current():  # taken over while this replica was away: say nothing
            log.warning("not keeping or posting trace %s: another replica took the job over", trace.trace_id)
            return trace
        self._keep(trace)
        self._remember_turn(job, trace)
        on_answered()
        delivered = False
        try:
            delivered = progress.finish(trace)
        finally:
            if not quick:  # help and chit-chat set no status and no reaction
                conclude(self._client, job, trace, delivered, self._progress.budget)
            log.info(
                "answered trace_id=%s channel=%s steps=%d tokens=%d ms=%d delivered=%s",
                trace.trace_id,
                job.channel,
                trace.totals.steps,
                trace.totals.tokens,
                trace.totals.elapsed_ms,
                delivered,
            )
        if delivered and not quick and self._progress.post_chart is not None:  # the picture, once all else is done
            self._progress.post_chart(self._client, job, trace)
        return trace

    def _run(self, job: Job, question: Question, on_step: StepObserver) -> Trace:
        try:
            return self._responder(question, on_step)
        except Exception as exc:  # the one catch for this surface: the user still gets an answer
            log.exception("responder failed channel=%s thread=%s", job.channel, job.thread_ts)
            return internal_error_trace(question, exc)

    def _observer(
        self, question: Question, show: StepObserver, trace_id: str, earlier: tuple[Step, ...] = ()
    ) -> tuple[StepObserver, str]:
        """What sees each step (with a StepLog, the store too) and the run's trace id ("": the responder's)."""
        if self._steps is None or question.quick_only:  # a quick answer is kept whole, or not at all
            return show, trace_id
        trace_id = trace_id or new_trace_id()
        return self._steps.observer(trace_id, question.text, show, earlier), trace_id

    def _hand_over(self, trace: Trace, progress: ThreadProgress) -> None:
        """The quick attempt's record is kept when it spent anything; a progress display it opened is closed."""
        if trace.steps or trace.totals.tokens:
            self._keep(trace)
        progress.close(f"_{handed_back(trace)}_")

    def post_trace(self, channel: str, question: Question, trace: Trace) -> None:
        """Post a finished trace (e.g. an Alertmanager-triggered diagnosis): an anchor, the answer in its thread."""
        anchor = self._client.chat_postMessage(channel=channel, text=f"🚨 {anchor_quote(question.text, 300)}")
        thread_ts = str(anchor["ts"])
        job = Job(replace(question, channel=channel, thread_ts=thread_ts), channel, thread_ts)
        self._remember_recent(trace)  # the caller (the API's dispatcher) has stored it already
        self._memory.remember(channel, thread_ts, trace)  # a follow-up @mention in that thread has the context
        if not ThreadProgress(self._client, job, ProgressOptions(use_streaming=False)).finish(trace):
            raise RuntimeError(f"could not post trace {trace.trace_id} to {channel}")

    def _history(self, job: Job) -> tuple[str, ...]:
        remembered = self._memory.recall(job.channel, job.thread_ts)
        if remembered or not job.read_thread:
            return remembered
        try:  # a thread opsbot has not answered in yet (e.g. an alert's): its messages are the context
            replies = self._client.conversations_replies(channel=job.channel, ts=job.thread_ts, limit=50)
            return thread_context_from_replies(
                replies.get("messages") or [], current_ts=job.react_ts, bot_user_id=self._bot_user_id()
            )
        except Exception as exc:
            log.info("reading thread context failed channel=%s thread=%s: %s", job.channel, job.thread_ts, exc)
            return ()

    def _bot_user_id(self) -> str:
        if self._own_user_id is None:
            self._own_user_id = str(self._client.auth_test().get("user_id") or "")
        return self._own_user_id

    def _keep(self, trace: Trace) -> None:
        try:
            self._persist(trace)  # before any post: a failed post must never lose the trace
        except Exception:
            log.exception("persisting the trace failed trace_id=%s", trace.trace_id)
        self._remember_recent(trace)

    def _remember_recent(self, trace: Trace) -> None:
        with self._lock:
            self._recent[trace.trace_id] = trace
            while len(self._recent) > _RECENT_TRACES:
                self._recent.popitem(last=False)

    def _remember_turn(self, job: Job, trace: Trace) -> None:
        try:  # before the post, so a quick follow-up in the thread already sees this turn
            self._memory.remember(job.channel, job.thread_ts, trace)
        except Exception:
            log.exception("thread memory failed trace_id=%s", trace.trace_id)
