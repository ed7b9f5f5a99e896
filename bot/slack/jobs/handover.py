"""A queued Slack diagnosis on whichever replica runs it: the job runner's Delivery for Slack threads.

- First attempt: the job's "queued" notice (posted by the replica that accepted it, maybe this one) becomes its
  progress message.
- A takeover (the replica running it died): this replica closes the dead attempt's progress message with a pointer
  below, and goes on in the same thread under a new message of its own that starts with the steps the dead attempt
  had found (they are in the job runner's ledger, bot/durable/attempt.py); the run is told what they found.
- A stream is never left open: before chat.startStream a replica marks the job "stream pending"; a replica that
  dies after Slack opened the stream but before it learnt its ts leaves that mark, and the takeover looks for the
  bot's messages in the thread since then and stops them.
- Past the runner's attempts, or still running when this process stops without Redis: the thread is told
  "interrupted: re-run?" with what was found; a job that never started is told "restarting" (memory only).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from slack_sdk import WebClient

from bot.durable.attempt import Attempt
from bot.engine.types import StopReason, Trace, trace_from_answer
from bot.slack.delivery.marks import MarkPool, call_quietly, say, withdraw
from bot.slack.jobs.state import Job, job_from_payload
from bot.slack.jobs.steplog import found_text

log = logging.getLogger(__name__)

MARKS_WAIT_S = 10.0  # a diagnosis waits at most this long for its 👀 and notice before it starts anyway
TAKEOVER_TEXT = "♻️ The opsbot replica running this stopped; going on here from what it had found (attempt {attempt})…"
RERUN_TEXT = "♻️ The opsbot replica running this stopped before it found anything; running it here (attempt {attempt})…"
MOVED_TEXT = "↪️ Interrupted: this diagnosis continues in a new message below."
CLOCK_SKEW_S = 2.0  # a stream opened this long before its "pending" mark still counts as that attempt's
PENDING, PROGRESS, NOTICE = "stream_pending", "progress_ts", "notice_ts"  # the marks kept with a job
PROGRESS_TEXT = "Diagnosing…"  # how a progress message's text starts (bot/slack/delivery/progress.py)

Answer = Callable[[Job, str, "AttemptOwner", Attempt], object]  # job, progress ts, owner, attempt -> (trace)
Persist = Callable[[Trace], None]


class AttemptOwner:
    """The MessageOwner seam of ThreadProgress for one attempt: it may write while its attempt is current."""

    def __init__(self, attempt: Attempt) -> None:
        self._attempt = attempt

    def opening(self) -> None:
        """A stream (or a progress message) is about to be opened: if this replica dies before it learns the ts,
        the takeover looks for it."""
        self._attempt.mark(PENDING, f"{time.time():.6f}")

    def take(self, ts: str) -> None:
        self._attempt.mark(PROGRESS, ts)
        self._attempt.mark(PENDING, "")

    def owns(self, ts: str) -> bool:
        return self._attempt.current()


class SlackDelivery:
    """The runner's Delivery for Slack jobs; `answer` runs one (the Runner's), `persist` keeps a trace."""

    def __init__(self, client: WebClient, answer: Answer, marks: MarkPool, persist: Persist) -> None:
        self._client, self._answer, self._marks, self._persist = client, answer, marks, persist
        self._bot_user = ""

    def run(self, attempt: Attempt) -> None:
        job = job_from_payload(attempt.payload)
        own = self._marks.take(attempt.job_id)  # this replica's future for the notice, when it queued the job
        if not attempt.taken_over:
            notice = notice_ts_from(own, attempt.marks.get(NOTICE, ""), job.channel)
            self._answer(job, notice, AttemptOwner(attempt), attempt)
            return
        self._retire(job, attempt)
        notice = RERUN_TEXT.format(attempt=attempt.number)
        if attempt.earlier_steps:
            notice = TAKEOVER_TEXT.format(attempt=attempt.number)
            notice += "\n" + found_text(attempt.number - 1, attempt.earlier_steps, attempt.job_id)
        self._answer(job, self._post(job, notice), AttemptOwner(attempt), attempt)

    def interrupted(self, attempt: Attempt, text: str) -> None:
        job = job_from_payload(attempt.payload)
        self._retire(job, attempt)
        found = found_text(max(attempt.number, 1), attempt.earlier_steps, attempt.job_id)
        unrun = trace_from_answer(
            job.question, text, complete=False, stop_reason=StopReason.INTERRUPTED, notes=("interrupted",)
        )
        self._persist_quietly(replace(unrun, trace_id=attempt.job_id, steps=attempt.earlier_steps))
        say(self._client, job, f"⚠️ {text}\n{found}")
        if job.react_ts:
            call_quietly(self._client, "reactions_add", channel=job.channel, timestamp=job.react_ts, name="warning")

    def restarting(self, attempt: Attempt, text: str) -> None:
        job = job_from_payload(attempt.payload)
        say(self._client, job, f"♻️ {text}")
        withdraw(self._client, job)

    def _retire(self, job: Job, attempt: Attempt) -> None:
        """Close the dead attempt's progress message, and any stream it opened but never recorded."""
        ts, notice = attempt.marks.get(PROGRESS, ""), attempt.marks.get(NOTICE, "")
        if ts == notice and ts:  # a plain message edited in place
            call_quietly(self._client, "chat_update", channel=job.channel, ts=ts, text=MOVED_TEXT, blocks=[])
        elif ts:  # a chat stream nobody will stop otherwise
            call_quietly(self._client, "chat_stopStream", channel=job.channel, ts=ts, markdown_text=MOVED_TEXT)
        pending = attempt.marks.get(PENDING, "")
        if pending:
            for orphan in self._orphans(job, float(pending) - CLOCK_SKEW_S, known={ts, notice}):
                log.warning("closing a message the dead attempt opened channel=%s ts=%s", job.channel, orphan.get("ts"))
                self._close(job, orphan)

    def _orphans(self, job: Job, since: float, known: set[str]) -> list[dict[str, Any]]:
        """The bot's messages in the job's thread since `since` that no mark names (opened by the dead attempt)."""
        try:
            replies = self._client.conversations_replies(
                channel=job.channel, ts=job.thread_ts, oldest=f"{since:.6f}", inclusive=True, limit=200
            )
        except Exception as exc:  # cannot look: nothing to close then; the answer still comes
            log.info("reading the thread to reconcile a pending stream failed channel=%s: %s", job.channel, exc)
            return []
        me = self._me()
        return [
            m
            for m in replies.get("messages") or []
            if _float(m.get("ts")) >= since and str(m.get("ts")) not in known and _is_mine(m, me)
        ]

    def _close(self, job: Job, orphan: dict[str, Any]) -> None:
        ts = str(orphan.get("ts"))
        try:
            self._client.chat_stopStream(channel=job.channel, ts=ts, markdown_text=MOVED_TEXT)
        except Exception:  # not a stream: only a progress message of ours is edited, never an answer
            if str(orphan.get("text", "")).startswith(PROGRESS_TEXT):
                call_quietly(self._client, "chat_update", channel=job.channel, ts=ts, text=MOVED_TEXT, blocks=[])

    def _me(self) -> str:
        if not self._bot_user:
            try:
                self._bot_user = str(self._client.auth_test().get("user_id") or "")
            except Exception as exc:
                log.info("auth.test failed: %s", exc)
        return self._bot_user

    def _post(self, job: Job, text: str) -> str:
        try:
            return str(self._client.chat_postMessage(channel=job.channel, thread_ts=job.thread_ts, text=text)["ts"])
        except Exception as exc:  # the run still shows its own progress and answer
            log.info("posting the takeover notice failed channel=%s: %s", job.channel, exc)
            return ""

    def _persist_quietly(self, trace: Trace) -> None:
        try:
            self._persist(trace)
        except Exception:
            log.exception("persisting the interrupted trace failed trace_id=%s", trace.trace_id)


def notice_ts_from(marks: Future[str] | None, known_ts: str, channel: str) -> str:
    """The "queued" notice's ts: from this replica's own future for the job's marks (waited for up to
    MARKS_WAIT_S), else `known_ts` (what the accepting replica kept with the job)."""
    if marks is None:
        return known_ts
    try:
        return marks.result(timeout=MARKS_WAIT_S)
    except Exception as exc:
        log.info("the job's marks were not posted in time channel=%s: %s", channel, exc)
        return ""


def _is_mine(message: dict[str, Any], me: str) -> bool:
    return bool(me) and message.get("user") == me


def _float(value: object) -> float:
    try:
        return float(str(value))
    except ValueError:
        return 0.0
