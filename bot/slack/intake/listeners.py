"""Bolt listeners: thin. They turn Slack payloads into Jobs for the Runner and answer within Slack's 3 s ack.

Entry points: @mention (answer in the mention's thread), `/diagnose` (ephemeral ack, an anchor message in the
channel, the work threaded under it), the "Diagnose this" message shortcut (callback id `diagnose_message`) and
DMs; the buttons are in bot/slack/intake/actions.py, the assistant thread in
bot/slack/intake/assistant.py. The agent, the
store and the access policy arrive as callables; nothing here imports tools or the LLM adapter. Nothing that
touches the network runs before a listener acks or returns: every Web API call, every store read and write is
handed to the runner's quick lane (`runner.defer` / `runner.accept`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from slack_bolt import App, BoltResponse
from slack_bolt.request import BoltRequest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from bot.engine.types import Question
from bot.safety.access import Admit, allow_all
from bot.safety.inbound import has_request_text
from bot.safety.outbound import anchor_quote
from bot.slack.delivery.notices import help_text, invite_text
from bot.slack.intake.actions import Actions, FetchTrace, RecordFeedback, tell
from bot.slack.intake.assistant import build_assistant
from bot.slack.intake.events import (
    clean_text,
    dedupe_keys,
    is_question_event,
    question_from_event,
    question_from_message_shortcut,
    thread_ts_of,
)
from bot.slack.jobs.runner import Runner
from bot.slack.jobs.state import Job

log = logging.getLogger(__name__)


def build_web_client(token: str, base_url: str, *, rate_limit_retries: int = 2, timeout_s: int = 30) -> WebClient:
    """A WebClient that honours 429 Retry-After (plus the default connection-error retry)."""
    client = WebClient(token=token or None, base_url=base_url, timeout=timeout_s)
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=rate_limit_retries))
    return client


@dataclass(frozen=True)
class SlackSurface:
    """The Bolt app and the runner behind it (wiring starts the runner and picks HTTP or Socket Mode)."""

    app: App
    runner: Runner


def build_app(
    runner: Runner,
    *,
    signing_secret: str,
    fetch_trace: FetchTrace,
    record_feedback: RecordFeedback | None = None,
    admit: Admit = allow_all,
    token_verification: bool = True,
    listener_threads: int = 64,
    assistant_prompts: Sequence[str] = (),
    process_before_response: bool = True,
) -> App:
    """The Bolt App with every opsbot listener registered; its client is the runner's client.

    Every listener only hands work over (nothing blocking before it acks or returns), so by default Bolt runs
    it on the request's own thread and answers when it returns (`process_before_response=True`): no hop through
    Bolt's listener pool and its 10 ms ack polling. The pool still serves the assistant middleware and the
    other mode; Bolt's default of 5 threads would starve acks under a burst, so it is sized too.
    """
    app = App(
        client=runner.client,
        signing_secret=signing_secret,
        process_before_response=process_before_response,
        token_verification_enabled=token_verification,
        listener_executor=ThreadPoolExecutor(max(listener_threads, 5), thread_name_prefix="bolt-listener"),
    )
    app.middleware(_log_retries)
    app.assistant(build_assistant(runner, assistant_prompts, admit))  # the AI app surface (assistant threads)
    _Listeners(runner, admit).register(app)
    Actions(runner, fetch_trace, record_feedback, admit).register(app)  # the buttons (bot/slack/intake/actions.py)
    return app


def _log_retries(request: BoltRequest, next: Callable[[], BoltResponse]) -> BoltResponse:
    # Retries are not dropped here (the first attempt may really have failed); the runner dedupes them.
    retry = request.headers.get("x-slack-retry-num")
    if retry:
        reason = request.headers.get("x-slack-retry-reason", ["?"])
        log.info("slack retry delivery num=%s reason=%s", retry[0], reason[0])
    return next()


class _Listeners:
    """The ways in: mentions, DMs, /diagnose and the message shortcut."""

    def __init__(self, runner: Runner, admit: Admit) -> None:
        self.runner = runner
        self.admit = admit

    def register(self, app: App) -> None:
        app.event("app_mention")(self.on_mention)
        app.event("message")(self.on_message)
        app.command("/diagnose")(self.on_diagnose)
        app.shortcut("diagnose_message")(self.on_shortcut)

    def on_mention(self, body: dict[str, Any], event: dict[str, Any], context: Mapping[str, Any]) -> None:
        """@opsbot in a channel: answer in the mention's thread."""
        me, bot_id = context.get("bot_user_id") or "", context.get("bot_id") or ""
        question = question_from_event(event, bot_user_id=me, bot_id=bot_id)
        if question is not None:
            self._enqueue(question, str(event["ts"]), str(body.get("team_id") or ""), dedupe_keys(body, event))
        elif is_question_event(event, me, bot_id):  # an empty mention: the usage, as /diagnose gives it
            self.runner.defer(self._usage, body, event, me)

    def _usage(self, body: dict[str, Any], event: Mapping[str, Any], me: str) -> None:
        keys = dedupe_keys(body, event)
        if self.runner.first_delivery(keys):
            self.runner.client.chat_postMessage(
                channel=event["channel"], thread_ts=thread_ts_of(event), text=help_text(me)
            )

    def on_message(self, body: dict[str, Any], event: dict[str, Any], context: Mapping[str, Any]) -> None:
        """Direct messages; channel messages are left to app_mention (one reply per mention)."""
        if event.get("channel_type") != "im":
            return
        self.on_mention(body, event, context)

    def on_diagnose(
        self,
        ack: Callable[..., None],
        command: dict[str, Any],
        respond: Callable[..., None],
        context: Mapping[str, Any],
    ) -> None:
        """/diagnose: ack at once, post an anchor in the channel, thread the work under it."""
        me = context.get("bot_user_id") or ""
        text, user, channel = clean_text(command.get("text") or "", me), command["user_id"], command["channel_id"]
        if not has_request_text(text):
            ack(help_text(context.get("bot_user_id") or ""))
            return
        if refusal := self.admit(user, channel):
            ack(f"⛔ {refusal}")
            return
        ack(f"🔎 On it: {anchor_quote(text)}")  # said before the gate reads what is asked: any kind
        self.runner.defer(self._anchor_and_submit, command, text, respond, context.get("bot_user_id") or "")

    def _anchor_and_submit(self, command: dict[str, Any], text: str, respond: Callable[..., None], me: str) -> None:
        """On the quick lane: the anchor message in the channel, then the job threaded under it."""
        user, channel = command["user_id"], command["channel_id"]
        try:
            anchor = self.runner.client.chat_postMessage(
                channel=channel, text=f"🔎 <@{user}> asked: {anchor_quote(text)}"
            )
        except SlackApiError as exc:
            log.warning("cannot post the /diagnose anchor channel=%s: %s", channel, exc.response.get("error"))
            respond(invite_text(me))
            return
        except Exception:  # Slack unreachable after the retries: say so rather than go quiet
            log.exception("posting the /diagnose anchor failed channel=%s", channel)
            respond("Slack did not accept my message just now; please try again in a minute.")
            return
        anchor_ts = str(anchor["ts"])
        question = Question(text=text, user=user, channel=channel, thread_ts=anchor_ts, source="slack")
        self.runner.submit(Job(question, channel, anchor_ts, anchor_ts, user, str(command.get("team_id") or "")))

    def on_shortcut(self, ack: Callable[..., None], body: dict[str, Any]) -> None:
        """The "Diagnose this" message shortcut, e.g. on an alert inside a thread."""
        ack()
        question = question_from_message_shortcut(body)
        if question is None:
            self.runner.defer(tell, self.runner.client, body, "That message has no text to diagnose.")
            return
        self._enqueue(question, str(body["message"]["ts"]), str((body.get("team") or {}).get("id", "")), ())

    def _enqueue(self, question: Question, react_ts: str, team: str, keys: tuple[str, ...]) -> None:
        in_thread = question.thread_ts != react_ts
        job = Job(question, question.channel, question.thread_ts, react_ts, question.user, team, in_thread)
        self.runner.accept(job, keys, admit=self.admit)
