"""Running a durable Slack job on whichever replica got it: the first delivery, a takeover, or the last word.

- First delivery: the job's "queued" notice (posted by the replica that accepted it, maybe this one) becomes
  its progress message, as in memory mode.
- A takeover (the replica running it died): this replica becomes the owner of the old progress message, closes
  it with a pointer below, and re-runs the job in the same thread under a new message of its own. The dead
  attempt's stored trace is closed as interrupted (its steps kept) and the takeover notice says what that
  attempt had already found (bot/slack/jobs/steplog.py).
- Past `max_attempts` deliveries: the job is finished in its thread as "interrupted: re-run?", with the same
  account of what the last attempt found.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future

from slack_sdk import WebClient

from bot.engine.types import Trace
from bot.slack.delivery.marks import call_quietly
from bot.slack.jobs.slackstream import Delivery, SlackJobStream
from bot.slack.jobs.state import Job
from bot.slack.jobs.steplog import StepLog, found_text

log = logging.getLogger(__name__)

MARKS_WAIT_S = 10.0  # a diagnosis waits at most this long for its 👀 and notice before it starts anyway
TAKEOVER_TEXT = "♻️ The opsbot replica running this stopped; re-running it here (attempt {attempt})…"
MOVED_TEXT = "↪️ Interrupted: this diagnosis continues in a new message below."
INTERRUPTED_TEXT = (
    "⚠️ opsbot was interrupted (a replica stopped) before finishing this diagnosis, {attempts} "
    "times. Re-run? Ask again to start it anew."
)

Run = Callable[[Job, str, "MessageOwnership | None", str], object]  # job, progress ts, owner, trace id -> (trace)


class MessageOwnership:
    """The MessageOwner seam of ThreadProgress for one durable job."""

    def __init__(self, stream: SlackJobStream, job_id: str, channel: str) -> None:
        self._stream, self._job_id, self._channel = stream, job_id, channel

    def take(self, ts: str) -> None:
        self._stream.take_message(self._job_id, self._channel, ts)

    def owns(self, ts: str) -> bool:
        return self._stream.owns_message(self._channel, ts)

    def interrupted(self, trace_id: str, steps: StepLog | None) -> Trace | None:
        """The dead attempt's run: its stored trace closed as interrupted, its status "interrupted" (for the API)."""
        if not trace_id:
            return None
        _quietly(self._stream.set_status, trace_id, "interrupted")
        return steps.close_interrupted(trace_id) if steps is not None else None


def answer_delivery(
    client: WebClient,
    delivery: Delivery,
    run: Run,
    marks: Future[str] | None,
    *,
    durable: SlackJobStream | None,
    steps: StepLog | None = None,
) -> None:
    """Answer one queued delivery: from this process' queue, under its "queued" notice (`marks` posted it); from
    the durable stream, as `run_delivery` says (a first delivery, a takeover, or the last word)."""
    if durable is None:
        run(delivery.job, notice_ts_from(marks, "", delivery.job.channel), None, "")
        return
    owner = MessageOwnership(durable, delivery.job_id, delivery.job.channel)
    run_delivery(client, owner, delivery, run, marks, max_attempts=durable.max_attempts, steps=steps)


def run_delivery(
    client: WebClient,
    owner: MessageOwnership,
    delivery: Delivery,
    run: Run,
    marks: Future[str] | None = None,
    *,
    max_attempts: int,
    steps: StepLog | None = None,
) -> None:
    """Answer one delivery of a durable job (see the module docstring); `marks` is this replica's own future
    for the job's notice when it accepted the job itself; with `steps`, the run's steps are stored as they go."""
    job = delivery.job
    found = ""
    if delivery.attempt > 1:
        earlier = owner.interrupted(delivery.earlier_trace_id, steps)
        found = "" if steps is None else "\n" + found_text(delivery.attempt - 1, earlier)  # not kept: not said
    if delivery.attempt > max_attempts:
        log.warning(
            "slack job %s was interrupted %d times; finishing it as interrupted", delivery.job_id, delivery.attempt - 1
        )
        _retire(client, owner, delivery)
        call_quietly(
            client,
            "chat_postMessage",
            channel=job.channel,
            thread_ts=job.thread_ts,
            text=INTERRUPTED_TEXT.format(attempts=delivery.attempt - 1) + found,
        )
        if job.react_ts:
            call_quietly(client, "reactions_add", channel=job.channel, timestamp=job.react_ts, name="warning")
        return
    if delivery.attempt > 1:
        log.warning("re-running slack job %s (attempt %d) after its replica stopped", delivery.job_id, delivery.attempt)
        _retire(client, owner, delivery)
        notice = TAKEOVER_TEXT.format(attempt=delivery.attempt) + found
        run(job, _post(client, job, notice), owner, delivery.trace_id)
        return
    run(job, notice_ts_from(marks, delivery.notice_ts, job.channel), owner, delivery.trace_id)


def notice_ts_from(marks: Future[str] | None, known_ts: str, channel: str) -> str:
    """The "queued" notice's ts: from this replica's own future for the job's marks (waited for up to
    MARKS_WAIT_S), else `known_ts` (what the accepting replica stored with a durable job)."""
    if marks is None:
        return known_ts
    try:
        return marks.result(timeout=MARKS_WAIT_S)
    except Exception as exc:
        log.info("the job's marks were not posted in time channel=%s: %s", channel, exc)
        return ""


def _retire(client: WebClient, owner: MessageOwnership, delivery: Delivery) -> None:
    """Own the dead attempt's progress message (so its replica, if only paused, writes no more) and close it."""
    ts, job = delivery.progress_ts, delivery.job
    if not ts:
        return
    owner.take(ts)
    if ts == delivery.notice_ts:  # a plain message edited in place
        call_quietly(client, "chat_update", channel=job.channel, ts=ts, text=MOVED_TEXT, blocks=[])
    else:  # a chat stream nobody will stop otherwise
        call_quietly(client, "chat_stopStream", channel=job.channel, ts=ts, markdown_text=MOVED_TEXT)


def _quietly(action: Callable[..., object], *args: object) -> None:
    try:
        action(*args)
    except Exception as exc:  # Redis away: the status stays "running" until it expires; the thread is told anyway
        log.info("%s failed: %s", getattr(action, "__name__", action), exc)


def _post(client: WebClient, job: Job, text: str) -> str:
    try:
        return str(client.chat_postMessage(channel=job.channel, thread_ts=job.thread_ts, text=text).get("ts") or "")
    except Exception as exc:  # the re-run still streams its own answer
        log.info("posting the takeover notice failed channel=%s: %s", job.channel, exc)
        return ""
