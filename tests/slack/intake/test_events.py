"""Slack events -> Questions: mentions stripped, broadcasts neutralised, bots and subtypes ignored."""

from __future__ import annotations

from bot.slack.intake.events import (
    clean_text,
    dedupe_keys,
    question_from_event,
    question_from_message_shortcut,
    thread_context_from_replies,
)

BOT = "UBOT"


def test_bot_mention_is_stripped_and_thread_is_the_mention() -> None:
    event = {"type": "app_mention", "user": "U1", "channel": "C1", "ts": "1.0", "text": f"<@{BOT}> why is order slow?"}
    question = question_from_event(event, bot_user_id=BOT, history=("Q: earlier",))
    assert question is not None
    assert question.text == "why is order slow?"
    assert (question.channel, question.thread_ts, question.user) == ("C1", "1.0", "U1")
    assert question.history == ("Q: earlier",)


def test_mention_inside_a_thread_answers_in_that_thread() -> None:
    event = {"user": "U1", "channel": "C1", "ts": "2.0", "thread_ts": "1.0", "text": f"<@{BOT}> and payment?"}
    question = question_from_event(event, bot_user_id=BOT)
    assert question is not None and question.thread_ts == "1.0"


def test_broadcast_mentions_are_never_echoed() -> None:
    text = clean_text(f"<@{BOT}> <!channel> <!here|here> <!everyone> <!subteam^S123|@oncall> @channel why?", BOT)
    for ping in ("<!channel>", "<!here", "<!everyone>", "<!subteam", "@channel", "@here", "@everyone", "@oncall"):
        assert ping not in text
    assert "why?" in text and "channel" in text  # still readable


def test_bot_messages_and_own_messages_are_ignored() -> None:
    base = {"channel": "C1", "ts": "1.0", "text": f"<@{BOT}> why is order slow?"}
    assert question_from_event(base | {"bot_id": "B2", "user": "U2"}, bot_user_id=BOT) is None
    assert question_from_event(base | {"user": BOT}, bot_user_id=BOT) is None
    assert question_from_event(base | {"user": "U1", "bot_profile": {"id": "B9"}}, bot_user_id=BOT) is None


def test_message_subtypes_are_ignored() -> None:
    for subtype in ("message_changed", "channel_join", "message_deleted", "bot_message"):
        event = {"user": "U1", "channel": "C1", "ts": "1.0", "text": "why?", "subtype": subtype}
        assert question_from_event(event, bot_user_id=BOT) is None


def test_mention_without_a_question_is_ignored() -> None:
    event = {"user": "U1", "channel": "C1", "ts": "1", "text": f"<@{BOT}>  "}
    assert question_from_event(event, bot_user_id=BOT) is None


def test_message_shortcut_quotes_the_alert_as_untrusted_text() -> None:
    body = {
        "user": {"id": "U1"},
        "channel": {"id": "C9"},
        "message": {
            "ts": "5.0",
            "thread_ts": "4.0",
            "text": "[FIRING] order p99 > 1s <!here>",
            "attachments": [{"fallback": "runbook: check hikari"}],
        },
    }
    question = question_from_message_shortcut(body)
    assert question is not None
    assert question.thread_ts == "4.0" and question.channel == "C9"
    assert "> [FIRING] order p99 > 1s" in question.text and "runbook: check hikari" in question.text
    assert "<!here>" not in question.text


def test_dedupe_keys_cover_event_id_client_msg_id_and_channel_ts() -> None:
    keys = dedupe_keys({"event_id": "Ev1"}, {"client_msg_id": "m1", "channel": "C1", "ts": "1.0"})
    assert keys == ("event:Ev1", "msg:m1", "ts:C1:1.0")


def test_thread_context_keeps_the_root_and_the_latest_messages() -> None:
    messages = [{"ts": f"1.{n}", "user": "U1", "text": f"message {n}"} for n in range(20)]
    context = thread_context_from_replies(messages, current_ts="1.19", bot_user_id=BOT, max_messages=4)
    assert [line.rsplit(" ", 1)[-1] for line in context] == ["0", "16", "17", "18"]
    assert thread_context_from_replies([], current_ts="1.0") == ()
