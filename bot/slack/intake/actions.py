"""The buttons of opsbot's messages: 👍/👎, Re-run and Show full trace on a final answer (with the trace modal's
Previous / Next), Investigate / Just answer after an unsure intent, and "🔎 Investigate" under a quick answer.

Each one acks at once and hands its work to the runner's quick lane (`runner.defer`), like every listener; the one
exception is `views.open` for "Show full trace", which must use the trigger_id at once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.engine.types import Intent, Question, Trace
from bot.safety.access import Admit
from bot.slack.delivery import render
from bot.slack.delivery.notices import ACTION_INVESTIGATE, ACTION_JUST_ANSWER
from bot.slack.jobs.runner import Runner
from bot.slack.jobs.state import Job

log = logging.getLogger(__name__)

INVESTIGATE_CHOSEN = Intent("diagnose", 1.0, "rules", "the user chose Investigate under a quick answer")
RecordFeedback = Callable[[str, str, int], None]  # (trace_id, user, vote +1/-1)
FetchTrace = Callable[[str], Trace | None]


class Actions:
    """The interactive components' listeners; `register` wires them into a Bolt App."""

    def __init__(
        self, runner: Runner, fetch_trace: FetchTrace, record_feedback: RecordFeedback | None, admit: Admit
    ) -> None:
        self.runner = runner
        self.fetch_trace = fetch_trace
        self.record_feedback = record_feedback
        self.admit = admit

    def register(self, app: App) -> None:
        app.action(render.ACTION_VOTE_UP)(self.on_vote)
        app.action(render.ACTION_VOTE_DOWN)(self.on_vote)
        app.action(render.ACTION_RERUN)(self.on_rerun)
        app.action(render.ACTION_SHOW_TRACE)(self.on_show_trace)
        app.action(re.compile(f"^{render.ACTION_TRACE_PAGE}_"))(self.on_trace_page)
        app.action(render.ACTION_INVESTIGATE_ANSWER)(self.on_investigate)
        app.action(ACTION_INVESTIGATE)(self.on_choice)
        app.action(ACTION_JUST_ANSWER)(self.on_choice)

    def on_vote(self, ack: Callable[..., None], body: dict[str, Any], action: dict[str, Any]) -> None:
        """👍/👎: the vote is stored with the trace."""
        ack()
        self.runner.defer(self._vote, body, action)

    def _vote(self, body: dict[str, Any], action: dict[str, Any]) -> None:
        vote = 1 if action["action_id"] == render.ACTION_VOTE_UP else -1
        if self.record_feedback is not None:
            try:
                self.record_feedback(action["value"], body["user"]["id"], vote)
            except Exception:
                log.exception("recording feedback failed trace_id=%s", action["value"])
                tell(self.runner.client, body, "Sorry, your vote could not be stored.")
                return
        thanks = "Thanks, your feedback is recorded." if vote > 0 else "Thanks, noted: this answer missed."
        tell(self.runner.client, body, thanks)

    def on_rerun(self, ack: Callable[..., None], body: dict[str, Any], action: dict[str, Any]) -> None:
        """Re-run: a new run of the stored question, in the same thread."""
        ack()
        self.runner.defer(self._rerun, body, action)

    def on_investigate(self, ack: Callable[..., None], body: dict[str, Any], action: dict[str, Any]) -> None:
        """🔎 Investigate under a quick answer: the stored question as a full diagnosis, in the same thread."""
        ack()
        self.runner.defer(self._rerun, body, action, INVESTIGATE_CHOSEN)

    def on_choice(self, ack: Callable[..., None], body: dict[str, Any], action: dict[str, Any]) -> None:
        """Investigate / Just answer, after an unsure intent."""
        ack()
        message_ts = str((body.get("message") or {}).get("ts") or "")
        investigate = action["action_id"] == ACTION_INVESTIGATE
        self.runner.defer(self._choose, body, action["value"], investigate, message_ts)

    def _choose(self, body: dict[str, Any], choice_id: str, investigate: bool, message_ts: str) -> None:
        if self.runner.choose(choice_id, investigate, body["user"]["id"], message_ts).outcome == "rejected":
            tell(self.runner.client, body, "That question was already answered or has expired; please ask again.")

    def _rerun(self, body: dict[str, Any], action: dict[str, Any], intent: Intent | None = None) -> None:
        """A new run of the stored question; with `intent` (🔎 Investigate), routed so. Under a plain answer
        (chit-chat, help, a refusal) the click says the gate missed a diagnosis: that answer gets a 👎, so `opsbot
        intent export` offers the message for retraining. Under a lookup it may only be the next question ("and
        why?"), so no vote is cast for the person."""
        trace = self.fetch_trace(action["value"])
        if trace is None:
            tell(self.runner.client, body, "I can't find that run any more; please ask again.")
            return
        message, user = body.get("message") or {}, body["user"]["id"]
        channel = body["channel"]["id"]
        thread_ts = str(message.get("thread_ts") or message.get("ts") or "")
        missed = intent is not None and trace.intent is not None and trace.intent.route != "lookup"
        if missed and self.record_feedback is not None:
            try:
                self.record_feedback(trace.trace_id, user, -1)
            except Exception:  # the investigation matters more than the label
                log.exception("recording the missed route failed trace_id=%s", trace.trace_id)
        question = Question(
            text=trace.question, user=user, channel=channel, thread_ts=thread_ts, source="slack", intent=intent
        )
        job = Job(question, channel, thread_ts, "", user, str((body.get("team") or {}).get("id", "")))
        self.runner.submit(job, admit=self.admit)

    def on_show_trace(
        self, ack: Callable[..., None], body: dict[str, Any], action: dict[str, Any], client: WebClient
    ) -> None:
        """Show full trace: views.open first, while the trigger_id is fresh."""
        ack()
        trace = self.fetch_trace(action["value"])
        view = (
            render.trace_to_modal(trace)
            if trace
            else {
                "type": "modal",
                "title": {"type": "plain_text", "text": "opsbot trace"},
                "blocks": [render.section(f"Trace `{render.mrkdwn_escape(action['value'])}` is no longer stored.")],
            }
        )
        client.views_open(trigger_id=body["trigger_id"], view=view)

    def on_trace_page(
        self, ack: Callable[..., None], body: dict[str, Any], action: dict[str, Any], client: WebClient
    ) -> None:
        """Previous / Next inside the trace modal: the same modal, another page."""
        ack()
        self.runner.defer(self._turn_page, body, action, client)

    def _turn_page(self, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        trace_id, page = render.page_from_value(action["value"])
        trace = self.fetch_trace(trace_id)
        if trace is not None:
            view = body["view"]
            client.views_update(view_id=view["id"], hash=view.get("hash"), view=render.trace_to_modal(trace, page))


def tell(client: WebClient, body: Mapping[str, Any], text: str) -> None:
    """An ephemeral reply to whoever clicked or used the shortcut, in the message's thread."""
    channel = (body.get("channel") or {}).get("id", "")
    message = body.get("message") or {}
    thread_ts = str(message.get("thread_ts") or "")
    try:
        client.chat_postEphemeral(channel=channel, user=body["user"]["id"], text=text, thread_ts=thread_ts or None)
    except SlackApiError as exc:
        log.info("ephemeral reply failed channel=%s: %s", channel, exc.response.get("error"))
