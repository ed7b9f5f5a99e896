"""opsbot's own pools for Slack work, in two lanes. Bolt's listener threads only hand over; they never wait.

The quick lane (`quick_workers` threads) takes every job first: dedupe, access, then the intent gate. Help,
chit-chat and quick lookups are answered right there, so they never queue behind diagnoses; an unsure intent gets
"🔎 Investigate" / "Just answer" buttons instead of a run. Diagnoses go to the job runner (bot/durable/runner.py),
answered by `workers` threads. The 👀, the status and the "queued" notice are posted on a third small pool
(bot/slack/delivery/marks.py). The position a notice gives is the job's true place in the queue at the moment it
was queued, counting the idle workers of every replica (bot/durable/capacity.py).

The runner keeps diagnoses in this process by default, or with OPSBOT_REDIS__URL on a Redis stream shared by every
replica: a job whose replica dies is taken over in its thread by another, with the steps it had found
(bot/slack/jobs/handover.py), and on SIGTERM queued jobs stay in the stream for the others.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from slack_sdk import WebClient

from bot.durable.attempt import Attempt
from bot.durable.runner import JobRunner, RunnerOptions
from bot.engine.types import Intent, Question, Responder, Trace, handed_back, new_trace_id
from bot.safety.access import Admit
from bot.slack.delivery.marks import MarkPool, call_quietly, say, withdraw
from bot.slack.delivery.progress import MessageOwner, ProgressOptions
from bot.slack.delivery.reply import Persist, Replier
from bot.slack.jobs.backlog import SLACK_JOBS, Lanes, SlackState, Submission, inflight_key
from bot.slack.jobs.choices import PendingChoices
from bot.slack.jobs.handover import NOTICE, SlackDelivery, notice_ts_from
from bot.slack.jobs.quicklane import Acked, QuickLane, logged
from bot.slack.jobs.state import Job, job_to_payload

log = logging.getLogger(__name__)

Classify = Callable[[str], Intent]
QUICK_ROUTES = frozenset({"help", "chitchat", "lookup", "act"})  # act: the canned read-only answer
ALREADY_WORKING = "🔁 I'm already working on that question in this thread; the answer comes here."


class Runner:
    """The quick lane, the diagnoses on the job runner, and the pool that posts a job's marks."""

    def __init__(
        self,
        client: WebClient,
        responder: Responder,
        *,
        persist: Persist,
        state: SlackState | None = None,
        lanes: Lanes | None = None,
        progress: ProgressOptions | None = None,
        classify: Classify | None = None,
    ) -> None:
        """`persist` keeps each trace before anything is posted; `state`, `lanes` and `progress` are the option
        objects wiring builds once from settings.slack (in-process defaults when left out); with `classify` (the
        intent gate), questions are triaged on the quick lane."""
        self.client, self._classify = client, classify
        state, self._lanes, progress = state or SlackState(), lanes or Lanes(), progress or ProgressOptions()
        self._dedupe, self._steps = state.dedupe, state.steps
        self._budget = progress.budget
        options = RunnerOptions(name="slack-jobs", workers=self._lanes.workers, queue_size=self._lanes.queue_size)
        self._jobs = state.jobs or JobRunner(options)
        self._replier = Replier(
            client, responder, persist=persist, memory=state.memory, progress=progress, steps=state.steps
        )
        self._choices = PendingChoices(client)
        self._quick = QuickLane(client, self._lanes.quick_workers, state.dedupe)
        marks = (self._lanes.marks_workers, self._budget, progress.status_text, self._set_notice)
        self._marks = MarkPool(client, *marks)
        self._delivery = SlackDelivery(client, self._run_attempt, self._marks, persist)

    def start(self) -> None:
        """Start the diagnosis workers (idempotent)."""
        self._jobs.start({SLACK_JOBS: self._delivery})

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop taking jobs and give running ones up to `timeout_s` (in total) to finish and post. Queued jobs
        stay in the durable stream for the other replicas; in memory they are told "restarting: re-run?" (and one
        still running at the deadline "interrupted", with what it had found).
        Requests Slack was already told we took, still on the quick lane, get up to half of it first (one may
        queue a diagnosis, handed over or answered like any queued one); those left are answered "restarting:
        re-run?" in their threads (bot/slack/jobs/quicklane.py)."""
        deadline = time.monotonic() + timeout_s
        self._quick.stop(timeout_s / 2)
        self._jobs.close(max(deadline - time.monotonic(), 0.0))
        self._quick.shutdown()
        self._marks.shutdown()

    @property
    def active(self) -> int:
        """Diagnoses running now (on this replica)."""
        return self._jobs.active

    @property
    def queued(self) -> int:
        """Diagnoses waiting for a worker (in the shared stream: on any replica; -1 while Redis is away)."""
        return self._jobs.waiting()

    def runs(self, trace_id: str) -> bool:
        """True while the diagnosis `trace_id` is running (in this process, or on Redis: on any replica)."""
        try:
            return self._jobs.status(trace_id)[0] == "running"
        except Exception:  # Redis away: the caller says "unknown" rather than fail
            return False

    def recent_trace(self, trace_id: str) -> Trace | None:
        """A trace answered by this process (used when no TraceStore is configured)."""
        return self._replier.recent_trace(trace_id)

    def post_trace(self, channel: str, question: Question, trace: Trace) -> None:
        """Post a finished trace (e.g. an Alertmanager-triggered diagnosis): an anchor, the answer in its thread."""
        self._replier.post_trace(channel, question, trace)

    def defer(self, work: Callable[..., Any], *args: Any) -> None:
        """Run `work` on the quick lane (listeners hand over everything that touches the network)."""
        self._quick.defer(work, *args)

    def accept(self, job: Job, keys: Sequence[str] = (), admit: Admit | None = None) -> None:
        """Take a job without waiting: `submit` runs on the quick lane."""
        self._quick.defer(self.submit, job, keys, admit, acked=Acked(job, tuple(keys)))

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
            call_quietly(
                self.client,
                "chat_postEphemeral",
                channel=job.channel,
                user=job.user,
                text=f"⛔ {refusal}",
                thread_ts=job.thread_ts,
            )
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
        chosen = self._choices.choose(choice_id, investigate, user, message_ts)
        if chosen is None:
            return Submission("rejected")
        job = _with_intent(*chosen)
        return self._enqueue(job) if investigate else self._answer_now(job)

    def run(self, job: Job, marks: Future[str] | None = None) -> Trace:
        """Answer one job in its thread (workers call this; tests and the bench may call it directly)."""
        return self._answer(job, notice_ts_from(marks, "", job.channel))

    def _answer(
        self, job: Job, notice_ts: str, owner: MessageOwner | None = None, attempt: Attempt | None = None
    ) -> Trace:
        try:
            # Released once the trace is kept, before posting: asking again from then on is a new run.
            return self._replier.answer(
                job, on_answered=lambda: self._release(job), message_ts=notice_ts, owner=owner, attempt=attempt
            )
        finally:
            self._release(job)

    def _run_attempt(self, job: Job, notice_ts: str, owner: MessageOwner, attempt: Attempt) -> Trace:
        return self._answer(job, notice_ts, owner, attempt)

    def _set_notice(self, job_id: str, ts: str) -> None:
        if ts:
            logged(self._jobs.mark, job_id, NOTICE, ts)

    def _triage(self, question: Question) -> Intent | None:
        if self._classify is None or question.intent is not None:
            return question.intent
        try:
            return self._classify(question.text)
        except Exception:
            log.exception("the intent gate failed; asking the user")
            return Intent("diagnose", 0.0, "default", "classifier failed")

    def _answer_now(self, job: Job) -> Submission:
        """Answer on the quick lane. Only a lookup can turn into a diagnosis: it holds the question's in-flight
        claim from the start, an identical ask meanwhile is told it is being worked on, and a lookup that needs the
        full diagnosis hands the claim on to its queued job, never released in between: it is queued once."""
        quick = replace(job, react_ts="", question=replace(job.question, quick_only=True))  # plain: no reactions
        if job.question.intent is None or job.question.intent.route != "lookup":
            self._replier.answer(quick, on_answered=lambda: None)
            return Submission("answered")
        if not self._claim(job):
            say(self.client, job, ALREADY_WORKING)
            return Submission("duplicate")
        why = ""
        try:
            why = handed_back(self._replier.answer(quick, on_answered=lambda: self._release(job)))
        finally:
            if not why:
                self._release(job)
        if not why:
            return Submission("answered")
        # A lookup that needs the full diagnosis goes to the diagnosis lane like any diagnosis: its queue place,
        # its notice, its marks, the main LLM slots; the quick lane stays free for help and lookups.
        log.info("a quick answer escalates to the full diagnosis channel=%s: %s", job.channel, why)
        escalated = Intent("diagnose", 1.0, "rules", f"escalated from a quick answer: {why}")
        return self._enqueue(replace(job, question=replace(job.question, intent=escalated, escalated=why)), True)

    def _ask(self, job: Job) -> Submission:
        self._choices.ask(job)
        return Submission("asked")

    def _enqueue(self, job: Job, claimed: bool = False) -> Submission:
        """Queue a diagnosis; `claimed`: the quick lane holds the question's in-flight claim for it already."""
        if self._quick.closed:  # stopping: its thread was told "restarting: re-run?" already
            if claimed:
                self._release(job)
            return Submission("rejected")
        if not claimed and not self._claim(job):
            say(self.client, job, ALREADY_WORKING)
            return Submission("duplicate")
        with self._marks.queueing():  # the position, the put and the marks' future belong together
            job_id, position = self._put(job)
            workers = self._jobs.capacity()  # every replica's: the first `idle` jobs waiting start at once
            place = position - workers.idle if position is not None and position > workers.idle else 0
            if position is not None:
                self._marks.post(job, place, job_id, workers.total)
        if position is None:
            self._release(job)
            log.warning("work queue full, refusing channel=%s thread=%s", job.channel, job.thread_ts)
            say(self.client, job, "🚦 opsbot is busy and its queue is full. Please ask again in a few minutes.")
            withdraw(self.client, job, self._budget)
            return Submission("rejected")
        return Submission("queued", place) if place else Submission("started", position)

    def _put(self, job: Job) -> tuple[str, int | None]:
        try:  # the job's id is its run's trace id, on whichever replica (and attempt) runs it
            put = self._jobs.put(SLACK_JOBS, job_to_payload(job), new_trace_id())
        except Exception:  # Redis away: refuse like a full queue rather than lose the job in silence
            log.exception("could not queue the Slack job")
            put = None
        return put if put is not None else ("", None)

    def _claim(self, job: Job) -> bool:
        try:
            return self._jobs.hold(inflight_key(job))
        except Exception:  # Redis away: the put that follows refuses the job with a notice
            log.exception("could not check for a run of this question already in flight")
            return True

    def _release(self, job: Job) -> None:
        logged(self._jobs.release, inflight_key(job))


def _with_intent(job: Job, intent: Intent) -> Job:
    return replace(job, question=replace(job.question, intent=intent))
