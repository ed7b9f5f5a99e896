"""Slack event payloads -> Questions. Pure: no I/O, no Bolt.

User text is untrusted: the bot's own mention is stripped, broadcast mentions (<!channel>, <!here>,
<!everyone>, <!subteam^...>) are neutralised so the bot can never echo a ping, and bot messages, the bot's own
messages and message subtypes (edits, joins, deletions...) produce no question at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.engine.types import Question
from bot.safety.inbound import clean_inbound
from bot.safety.outbound import neutralise_mentions

# Subtypes that still carry a real user question; every other subtype (edits, joins, bot posts...) is ignored.
_QUESTION_SUBTYPES = frozenset({"thread_broadcast", "file_share"})
MAX_QUESTION_CHARS = 4_000


def clean_text(text: str, bot_user_id: str = "") -> str:
    """Through the inbound boundary (bot mention stripped, invisibles gone, length capped), mentions made inert."""
    return neutralise_mentions(clean_inbound(text, bot_user_id=bot_user_id, max_chars=MAX_QUESTION_CHARS))


def is_question_event(event: Mapping[str, Any], bot_user_id: str = "", bot_id: str = "") -> bool:
    """False for bot messages, the bot's own messages and non-question subtypes."""
    if event.get("bot_id") or event.get("bot_profile"):
        return False
    subtype = event.get("subtype")
    if subtype and subtype not in _QUESTION_SUBTYPES:
        return False
    user = event.get("user", "")
    return bool(user) and user != bot_user_id and user != bot_id


def thread_ts_of(event: Mapping[str, Any]) -> str:
    """Where the bot answers: the event's thread, or a new thread under the event."""
    return str(event.get("thread_ts") or event.get("ts") or "")


def question_from_event(
    event: Mapping[str, Any],
    *,
    bot_user_id: str = "",
    bot_id: str = "",
    history: Sequence[str] = (),
    source: str = "slack",
) -> Question | None:
    """A Question from an app_mention / message event, or None when the event must be ignored."""
    if not is_question_event(event, bot_user_id, bot_id):
        return None
    text = clean_text(str(event.get("text") or ""), bot_user_id)
    if not text:
        return None
    return Question(
        text=text,
        user=str(event.get("user", "")),
        channel=str(event.get("channel", "")),
        thread_ts=thread_ts_of(event),
        source=source,
        history=tuple(history),
    )


def question_from_message_shortcut(body: Mapping[str, Any], history: Sequence[str] = ()) -> Question | None:
    """The "Diagnose this" shortcut: the chosen message (e.g. an alert) becomes a quoted question."""
    message = body.get("message") or {}
    raw = str(message.get("text") or "")
    for attachment in message.get("attachments") or ():  # alert bots often put the details here
        raw += "\n" + str(attachment.get("fallback") or attachment.get("text") or "")
    text = clean_text(raw)
    if not text:
        return None
    quoted = "\n".join(f"> {line}" for line in text.splitlines())
    return Question(
        text=f"Diagnose this message (quoted, untrusted):\n{quoted}",
        user=str((body.get("user") or {}).get("id", "")),
        channel=str((body.get("channel") or {}).get("id", "")),
        thread_ts=thread_ts_of(message),
        source="slack",
        history=tuple(history),
    )


def thread_context_from_replies(
    messages: Sequence[Mapping[str, Any]],
    *,
    current_ts: str,
    bot_user_id: str = "",
    max_messages: int = 6,
    max_chars: int = 500,
) -> tuple[str, ...]:
    """Earlier messages of a thread the bot was called into (e.g. an alert), quoted as untrusted context.

    Keeps the root (usually the alert) and the latest few; skips the bot's own posts, which thread memory has.
    Alert bots' messages are kept on purpose: they are the context.
    """
    quoted = []
    for message in messages:
        if message.get("ts") == current_ts or (bot_user_id and message.get("user") == bot_user_id):
            continue
        raw = str(message.get("text") or "")
        for attachment in message.get("attachments") or ():
            raw += "\n" + str(attachment.get("fallback") or attachment.get("text") or "")
        text = " ".join(clean_text(raw, bot_user_id).split())
        if text:
            quoted.append(f"Earlier in the thread (quoted, untrusted): {text[:max_chars]}")
    return tuple(quoted[:1] + quoted[1:][-(max_messages - 1) :]) if quoted else ()


def dedupe_keys(body: Mapping[str, Any], event: Mapping[str, Any]) -> tuple[str, ...]:
    """Every identity a delivery has: the envelope event_id, the client_msg_id, and channel+ts."""
    keys = [f"event:{body['event_id']}"] if body.get("event_id") else []
    if event.get("client_msg_id"):
        keys.append(f"msg:{event['client_msg_id']}")
    if event.get("channel") and event.get("ts"):
        keys.append(f"ts:{event['channel']}:{event['ts']}")
    return tuple(keys)
