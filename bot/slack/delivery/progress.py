"""Live progress of one run in its Slack thread, and the final answer.

Preferred: Slack chat streaming with task cards (chat.startStream / appendStream / stopStream via slack-sdk's
chat_stream helper). Step updates are coalesced: at most one append per stream every `append_interval_s`, and
only when the shared CallBudget has a call left; what waits goes out with the next append or with the stop.
Otherwise (no streaming, the stream failed, or the job waited in the queue and its "queued" notice becomes the
progress message) ONE message is edited in place at most every `update_interval_s`, within the budget too.
The final answer is always delivered as text people and screen readers can read: stopStream (which takes no
`text`: the answer is the stream's markdown, the footer and buttons its blocks), else chat.update of the progress
message or a new threaded message (blocks with a `text` fallback); if even that fails it is logged with its trace id.
The trace is in the thread on every path: a stream keeps its task cards, and an answer that goes as one message (no
streaming, a stream that failed or found no budget to open, a takeover) lists the steps and what each found
(bot/slack/delivery/steplist.py). A job taken over from a dead replica starts with the steps that replica found.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from slack_sdk import WebClient
from slack_sdk.web.chat_stream import ChatStream
from slack_sdk.web.slack_response import SlackResponse

from bot.engine.types import Step, Trace
from bot.slack.delivery.answer import FinalMessage
from bot.slack.delivery.budget import CallBudget
from bot.slack.delivery.findings import deploy_time
from bot.slack.delivery.render import progress_blocks, step_to_task_chunk
from bot.slack.delivery.steplist import with_steps
from bot.slack.jobs.state import Job

FINAL_WAIT_S = 10.0  # the final message waits this long for the budget, then goes anyway

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProgressOptions:
    """How every run shows its progress, built once by wiring from settings.slack: chat streaming or one edited
    message, how often each may change, the thread status, and the one Web API budget all runs share."""

    use_streaming: bool = True
    update_interval_s: float = 3.0
    append_interval_s: float = 1.0
    status_text: str = "Diagnosing…"
    status_refresh_s: float = 90.0
    budget: CallBudget = field(default_factory=lambda: CallBudget({}))
    on_stream_fallback: Callable[[str], None] | None = None  # hears Slack's error code (for /metrics)
    post_chart: Callable[[WebClient, Job, Trace], bool] | None = None  # the symptom's chart, after the answer


class MessageOwner(Protocol):
    """Whether this run may still write to its thread (bot/slack/jobs/handover.py: while its attempt at the job is
    current); None: this process only. `opening` comes before a stream or progress message is opened and `take`
    once its ts is known, so a takeover can find one whose replica died in between."""

    def opening(self) -> None: ...

    def take(self, ts: str) -> None: ...

    def owns(self, ts: str) -> bool: ...


class ThreadProgress:
    """The progress display of one job; on_step is called from the worker running the agent."""

    def __init__(
        self,
        client: WebClient,
        job: Job,
        options: ProgressOptions | None = None,
        *,
        message_ts: str = "",
        owner: MessageOwner | None = None,
        clock: Callable[[], float] = time.monotonic,
        earlier: tuple[Step, ...] = (),
    ) -> None:
        o = options or ProgressOptions()
        self._client, self._job, self._options, self._budget, self._clock = client, job, o, o.budget, clock
        self._owner = owner
        self._taken = ""  # the progress message this replica took ownership of
        self.lost = False  # another replica took the job over: write nothing more
        self._streaming = o.use_streaming and not message_ts  # a queued notice becomes the progress message
        self._started = clock()
        self._steps: list[Step] = list(earlier)  # a takeover shows what the dead attempt found first
        self._pending: list[dict[str, Any]] = []  # task cards not appended yet
        self._stream: ChatStream | None = None
        self._message_ts = message_ts
        self._last_update = float("-inf")
        self._last_append = float("-inf")
        self._lock = threading.Lock()  # steps may arrive from the loop's tool threads
        self._status_at = clock()  # set when the job was taken (marks.acknowledge); refreshed after status_refresh_s
        self.stream_failures = 0

    def set_status(self) -> None:
        """Show "Diagnosing…" in the thread; Slack clears it after 2 minutes, so long runs refresh it."""
        self._status_at = self._clock()
        if not self._budget.try_take("assistant.threads.setStatus"):
            return  # cosmetic: skipped when its budget is spent
        try:
            self._client.assistant_threads_setStatus(
                channel_id=self._job.channel, thread_ts=self._job.thread_ts, status=self._options.status_text
            )
        except Exception as exc:  # cosmetic: a workspace without the feature still gets the answer
            log.info("setting the thread status failed channel=%s: %s", self._job.channel, exc)

    def begin(self) -> None:
        """A job that waited under a "queued" notice: that notice turns into the progress message now."""
        if self._message_ts:
            self._take(self._message_ts)
            with self._lock:
                try:
                    self._maybe_update()
                except Exception as exc:
                    log.info("turning the queued notice into progress failed channel=%s: %s", self._job.channel, exc)

    def on_step(self, step: Step) -> None:
        """Show a finished step (coalesced within the budget). Never raises into the agent."""
        with self._lock:
            self._steps.append(step)
            if self._clock() - self._status_at >= self._options.status_refresh_s:
                self.set_status()
            if not self._still_ours():
                return
            try:
                if self._streaming:
                    self._pending.append(step_to_task_chunk(step, deploy_time(self._steps)))
                    self._flush_stream()
                if not self._streaming:
                    self._maybe_update()
            except Exception:
                log.warning(
                    "progress update failed channel=%s thread=%s", self._job.channel, self._job.thread_ts, exc_info=True
                )

    def finish(self, trace: Trace) -> bool:
        """Deliver the final answer (composed by bot/slack/delivery/answer.py); False (and logged) only when every
        way of posting failed."""
        with self._lock:
            if not self._still_ours():
                log.warning("not posting trace %s: another replica took this job over", trace.trace_id)
                return False
            message = FinalMessage(trace)
            if self._streaming and (self._stream is not None or self._pending):
                if self._stream is None and not self._budget.try_take("chat.startStream"):
                    log.info("no budget to open a stream: trace %s goes as one message, with its steps", trace.trace_id)
                else:
                    try:  # stopStream takes no `text`: the answer is the stream's markdown, after the last cards
                        stream = self._stream or self._open_stream()
                        chunks = [*self._pending, {"type": "markdown_text", "text": message.markdown}]
                        stream.stop(chunks=chunks, blocks=message.tail)
                        self._pending = []
                        return True
                    except Exception as exc:
                        self._fall_back(exc)
            blocks = (
                message.blocks
                if message.plain or message.quick
                else with_steps(message.blocks, len(message.tail), trace)
            )
            return self._deliver(trace.trace_id, message.text, blocks)

    def close(self, text: str) -> None:
        """End a progress display without an answer (the run went elsewhere); nothing when none was shown."""
        with self._lock:
            try:
                if self._stream is not None:
                    self._stream.stop(chunks=[*self._pending, {"type": "markdown_text", "text": text}])
                elif self._message_ts:
                    self._client.chat_update(channel=self._job.channel, ts=self._message_ts, text=text, blocks=[])
            except Exception as exc:
                log.info("closing the progress display failed channel=%s: %s", self._job.channel, exc)

    def _flush_stream(self) -> None:
        # At most one call per stream per append_interval_s, and only with the shared budget's consent.
        method = "chat.appendStream" if self._stream is not None else "chat.startStream"
        if self._clock() - self._last_append < self._options.append_interval_s or not self._budget.try_take(method):
            return  # coalesced: the next append or the stop carries these cards
        try:
            stream = self._stream or self._open_stream()
            stream.append(chunks=self._pending)
            self._pending = []
            self._last_append = self._clock()
            self._take(stream.ts or "")
        except Exception as exc:
            self._fall_back(exc)

    def _open_stream(self) -> ChatStream:
        self._opening()
        self._stream = self._client.chat_stream(
            channel=self._job.channel,
            thread_ts=self._job.thread_ts,
            recipient_team_id=self._job.team or None,
            recipient_user_id=self._job.user or None,
            task_display_mode="plan",
        )
        return self._stream

    def _fall_back(self, exc: Exception) -> None:
        # A stream that broke mid-run (e.g. message_not_in_streaming_state) keeps its ts: edit that message.
        self.stream_failures += 1
        self._streaming = False
        if self._stream is not None and self._stream.ts:
            self._message_ts = self._stream.ts
        log.warning(
            "chat stream failed, falling back to chat.update channel=%s thread=%s: %s",
            self._job.channel,
            self._job.thread_ts,
            exc,
        )
        if self._options.on_stream_fallback is not None:
            try:
                self._options.on_stream_fallback(_error_code(exc))
            except Exception:  # counting a failure must not add one
                log.warning("the stream fallback observer failed", exc_info=True)

    def _maybe_update(self) -> None:
        now = self._clock()
        if now - self._last_update < self._options.update_interval_s or not self._budget.try_take("chat.update"):
            return  # the next step or the final answer carries this one
        self._last_update = now
        blocks = progress_blocks(self._job.question.text, self._steps, elapsed_s=now - self._started)
        text = f"Diagnosing… step {len(self._steps)}"
        if self._message_ts:
            self._client.chat_update(channel=self._job.channel, ts=self._message_ts, text=text, blocks=blocks)
        else:
            self._opening()
            self._message_ts = self._post(text, blocks)
            self._take(self._message_ts)

    def _take(self, ts: str) -> None:
        if self._owner is None or not ts or ts == self._taken:
            return
        self._taken = ts
        try:
            self._owner.take(ts)
        except Exception as exc:  # ownership only matters when a replica dies; the run goes on
            log.info("taking the progress message failed channel=%s: %s", self._job.channel, exc)

    def _opening(self) -> None:
        if self._owner is None:
            return
        try:
            self._owner.opening()
        except Exception as exc:  # only a takeover right now would miss it; the run goes on
            log.info("recording the stream about to open failed channel=%s: %s", self._job.channel, exc)

    def _still_ours(self) -> bool:
        """False once another replica took the job over (while this one was away): write nothing more."""
        if self._owner is not None and not self.lost and not self._owner.owns(self._taken):
            log.warning(
                "another replica took over the progress message channel=%s ts=%s; writing no more",
                self._job.channel,
                self._taken,
            )
            self.lost = True
        return not self.lost

    def _deliver(self, trace_id: str, text: str, blocks: list[dict[str, Any]]) -> bool:
        if self._message_ts:
            self._budget.take("chat.update", FINAL_WAIT_S)  # goes anyway after the wait: the answer must land
            try:
                self._client.chat_update(channel=self._job.channel, ts=self._message_ts, text=text, blocks=blocks)
                return True
            except Exception as exc:
                log.warning("final chat.update failed trace_id=%s: %s; posting a new message", trace_id, exc)
        try:
            self._post(text, blocks)
            return True
        except Exception:
            log.error(
                "final answer could not be posted trace_id=%s channel=%s thread=%s",
                trace_id,
                self._job.channel,
                self._job.thread_ts,
                exc_info=True,
            )
            return False

    def _post(self, text: str, blocks: list[dict[str, Any]]) -> str:
        response = self._client.chat_postMessage(
            channel=self._job.channel, thread_ts=self._job.thread_ts, text=text, blocks=blocks
        )
        return str(response.get("ts") or "")


def _error_code(exc: Exception) -> str:
    """Slack's error code ("message_not_in_streaming_state") or, for anything else, the exception's class."""
    response = getattr(exc, "response", None)
    code = response.get("error") if isinstance(response, SlackResponse) else None
    return str(code or type(exc).__name__)
