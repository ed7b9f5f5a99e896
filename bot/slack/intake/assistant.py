"""Slack's AI app surface: the assistant thread, through Bolt's `Assistant` middleware.

When someone opens an assistant thread, opsbot offers suggested prompts; each message in the thread becomes a Job
like a mention (the same lanes: triage first, the thread's status set while a diagnosis works, the answer
streamed into the thread) and titles the thread with the question. Like every listener here, these only hand over:
setting the prompts and the title are Web API calls, so they run on the runner's quick lane.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from slack_bolt import Assistant

from bot.safety.access import Admit
from bot.slack.delivery.render import trim
from bot.slack.intake.events import dedupe_keys, question_from_event
from bot.slack.jobs.runner import Runner
from bot.slack.jobs.state import Job

log = logging.getLogger(__name__)

MAX_PROMPTS = 4  # Slack shows at most four suggested prompts
TITLE_CHARS = 80


def build_assistant(runner: Runner, prompts: Sequence[str], admit: Admit) -> Assistant:
    """The Assistant middleware over `runner` (register it with `app.assistant(...)`)."""
    assistant = Assistant()
    assistant.thread_started(_thread_started(runner, prompts))
    assistant.thread_context_changed(_ignore_context)  # the default would call Slack on Bolt's listener thread
    assistant.user_message(_user_message(runner, admit))
    return assistant


def _thread_started(runner: Runner, prompts: Sequence[str]) -> Callable[..., None]:
    def on_thread_started(set_suggested_prompts: Callable[..., Any]) -> None:
        """Offer what to ask (on the quick lane)."""
        chosen = [{"title": trim(p, 75, "…"), "message": p} for p in (prompts or suggested_prompts([]))[:MAX_PROMPTS]]
        runner.defer(set_suggested_prompts, chosen, "Try one of these, or ask in your own words")

    return on_thread_started


def _ignore_context(payload: Mapping[str, Any]) -> None:
    """opsbot does not use the channel the user is viewing; nothing to store."""


def _user_message(runner: Runner, admit: Admit) -> Callable[..., None]:
    def on_user_message(
        body: dict[str, Any], payload: dict[str, Any], context: Mapping[str, Any], set_title: Callable[..., Any]
    ) -> None:
        """A question in the assistant thread: title the thread and hand the job over."""
        question = question_from_event(
            payload, bot_user_id=context.get("bot_user_id") or "", bot_id=context.get("bot_id") or ""
        )
        if question is None:
            return
        runner.defer(set_title, trim(" ".join(question.text.split()), TITLE_CHARS, "…"))
        job = Job(
            question,
            question.channel,
            question.thread_ts,
            "",
            question.user,
            str(body.get("team_id") or ""),
            read_thread=False,
        )
        runner.accept(job, dedupe_keys(body, payload), admit=admit)

    return on_user_message


def suggested_prompts(services: Sequence[str]) -> list[str]:
    """Prompts for the configured services (the topology's first two), or general ones without a topology."""
    named = [s for s in services if s][:2]
    if not named:
        return ["Why are errors up in the last 30 minutes?", "What changed in the last hour?", "help"]
    first = named[0]
    prompts = [f"Why is {first} slow?", f"What is the p99 latency of {first} now?"]
    prompts += [f"Why is {named[1]} failing?"] if len(named) > 1 else []
    return [*prompts, "What can you do?"]
