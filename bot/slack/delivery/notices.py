"""Short notices: usage help, "invite me", the "queued" notice and the "Investigate / Just answer" question. Pure."""

from __future__ import annotations

from typing import Any

from bot.safety.outbound import anchor_quote
from bot.slack.delivery.render import mrkdwn_escape, section, trim

ACTION_INVESTIGATE = "opsbot_investigate"
ACTION_JUST_ANSWER = "opsbot_just_answer"


def help_text(bot_user_id: str = "") -> str:
    """What /diagnose with no question shows; mentions the bot by its real user id when Bolt knows it."""
    # outside code spans, so Slack renders the mention as the app's real name
    me = f"<@{bot_user_id}>" if bot_user_id else "@-mention me"
    return (
        "*opsbot* diagnoses incidents from metrics, logs and deploy records.\n"
        f"• {me} `why is order p99 high since 15:05?` in a channel, answered in the thread\n"
        "• `/diagnose <question>`: posts the question and threads the investigation under it\n"
        "• the *Diagnose this* message shortcut on an alert\n"
        f"• quick lookups: {me} `what is the p99 of order now?`"
    )


def invite_text(bot_user_id: str = "") -> str:
    """What /diagnose says in a conversation the bot is not a member of."""
    me = f"<@{bot_user_id}>" if bot_user_id else "this app"
    return f"I can't post in this conversation. Invite me first (`/invite`, then pick {me}) and try again."


def queued_text(ahead: int, workers: int) -> str:
    """The "queued" notice: the job's true place in line; it becomes the progress message when the job starts."""
    busy = "the diagnosis worker is busy" if workers == 1 else f"all {workers} diagnosis workers are busy"
    line = (
        f"⏳ You're next in line: {busy}."
        if ahead == 0
        else f"⏳ {ahead} {'diagnosis is' if ahead == 1 else 'diagnoses are'} waiting ahead of yours; {busy}."
    )
    return f"{line} This message turns into the live progress when a worker is free."


def ask_text(question: str) -> str:
    """The `text` fallback of the "Investigate / Just answer" question."""
    return f'Should I investigate "{anchor_quote(question)}" or just answer it?'


def ask_blocks(question: str, choice_id: str) -> list[dict[str, Any]]:
    """When the intent gate is unsure: ask before spending a diagnosis (the value is a pending-choice id)."""

    def button(text: str, action_id: str, style: str = "") -> dict[str, Any]:
        element = {
            "type": "button",
            "text": {"type": "plain_text", "text": text},
            "action_id": action_id,
            "value": choice_id,
        }
        return element | ({"style": style} if style else {})

    return [
        section(
            f"I'm not sure what you need for _{mrkdwn_escape(trim(question, 300))}_: a full investigation "
            "(metrics, logs, deploys; up to a minute or two) or a short answer?"
        ),
        {
            "type": "actions",
            "block_id": "opsbot_ask",
            "elements": [
                button("🔎 Investigate", ACTION_INVESTIGATE, "primary"),
                button("Just answer", ACTION_JUST_ANSWER),
            ],
        },
    ]


def chosen_text(investigate: bool, user: str) -> str:
    """What the question turns into once someone chose."""
    return f"🔎 Investigating, as <@{user}> asked." if investigate else f"💬 Answering briefly, as <@{user}> asked."
