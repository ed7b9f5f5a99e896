"""The two text boundaries (bot.safety.inbound, bot.safety.outbound) and the argument checks against now."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from bot.engine.text.arguments import UNPARSED_ARGS_KEY, args_from_json, too_deeply_nested
from bot.engine.types import Question, Step, StopReason, Totals, Trace, trace_to_dict
from bot.http.alerts import AlertGroup, question_from_alerts
from bot.routing.intent import classify
from bot.safety.inbound import MAX_COMBINING_RUN, clean_inbound, has_request_text, visible_text
from bot.safety.outbound import anchor_quote, api_value, json_bytes, neutralise_mentions, slack_markdown, slack_mrkdwn
from bot.safety.redact import redact
from tests.safety.hostile_entry import Outcome, leaves
from tools.base import ToolError
from tools.timerange import window_from_args

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "char",
    [
        "\x00",
        "\x07",
        "\x1b",
        "\x7f",
        "\x9b",
        "\u200b",
        "\u200c",
        "\u200d",
        "\u2060",
        "\u202e",
        "\u2066",
        "\ufeff",
        "\u00ad",
        "\ud800",
        "\udfff",
        "\ue000",
        "\ufdd0",
        "\U000e0041",
    ],
)
def test_inbound_removes_invisible_and_invalid_characters(char: str) -> None:
    cleaned = clean_inbound(f"why is{char} order slow?")
    assert cleaned == "why is order slow?"
    cleaned.encode("utf-8")  # encodes: no lone surrogate left


def test_inbound_keeps_real_text_and_caps_mark_runs() -> None:
    real = "Warum ist der Dienst langsam? なぜ遅い？ Tiếng Việt"
    assert clean_inbound(real) == real
    zalgo = clean_inbound("o" + "\u0301" * 50)
    assert zalgo == "o" + "\u0301" * MAX_COMBINING_RUN


def test_inbound_strips_the_bot_mention_and_caps_the_length() -> None:
    assert clean_inbound("<@UBOT> <@UBOT|opsbot> why?", bot_user_id="UBOT") == "why?"
    capped = clean_inbound("x" * 10_000, max_chars=100)
    assert len(capped) == 100 and capped.endswith("…")


def test_line_separators_become_newlines_and_blank_lines_go() -> None:
    assert clean_inbound("a\u2028b\r\n\r\nc\u2029d") == "a\nb\nc\nd"


@pytest.mark.parametrize("text", ["", "   ", "\u200b\u2060", "?!…", "<@UBOT>", "<!channel>", "\u0301\u0302"])
def test_text_without_a_request_is_recognised(text: str) -> None:
    assert not has_request_text(text)


def test_an_empty_request_is_routed_to_usage_without_the_model() -> None:
    intent = classify("\u200b\u2060 ?", llm=None)
    assert intent.route == "help" and intent.tier == "rules"


def test_outbound_neutralises_every_mention_and_link() -> None:
    text = (
        "<!channel> <!here|here> @everyone <!subteam^S1|@sre> <@U123> <@W9|bob> <#C1|general> "
        "<https://evil.example/login|https://grafana.ok> <mailto:a@b.c> <!date^1|today>"
    )
    out = neutralise_mentions(text)
    assert "<" not in out.replace("<\u2060", "")
    assert "https://grafana.ok (https://evil.example/login)" in out and "#general" in out and "today" in out
    assert "@\u2060channel" in out and "@\u2060bob" in out and "@\u2060U123" in out and "@\u2060sre" in out


def test_slack_fields_are_escaped_capped_and_visible_only() -> None:
    out = slack_mrkdwn("<script>x</script> & <img src=x> \u202e\x1b[31m" + "y" * 500, 100)
    assert out.startswith("&lt;script&gt;x&lt;/script&gt; &amp; &lt;img src=x&gt; ")
    assert "\u202e" not in out and "\x1b" not in out and len(out) == 100


def test_markdown_links_show_their_real_target() -> None:
    out = slack_markdown("see [grafana](https://evil.example/x) and ![p](https://evil.example/p.png)")
    assert out == "see grafana (https://evil.example/x) and p (https://evil.example/p.png)"


def test_outbound_redacts_again() -> None:
    assert "AKIAIOSFODNN7EXAMPLE" not in slack_mrkdwn("key AKIAIOSFODNN7EXAMPLE")
    assert "AKIAIOSFODNN7EXAMPLE" not in anchor_quote("key AKIAIOSFODNN7EXAMPLE")


def test_an_anchor_quotes_only_the_start_of_a_long_input() -> None:
    quote = anchor_quote("why " + "x" * 40_000)
    assert len(quote) <= 200 and quote.endswith("…")


def test_api_json_is_strict_and_neutralised() -> None:
    body = {"limit": float("inf"), "nan": float("nan"), "text": "<!channel> \ud800 ok", "list": [float("-inf")]}
    raw = json_bytes(body).decode("utf-8")
    parsed = json.loads(raw, parse_constant=lambda c: pytest.fail(f"non-standard constant {c}"))
    assert parsed == {"limit": None, "nan": None, "text": "@\u2060channel  ok", "list": [None]}
    assert api_value("plain") == "plain"


def test_trace_dicts_carry_no_infinity() -> None:
    step = Step(1, "", "query_logs", {"service": "order", "limit": float("inf")}, "", "error")
    trace = Trace("t", "q", "native", (step,), "a", False, StopReason.FINISH, Totals())
    assert trace_to_dict(trace)["steps"][0]["args"]["limit"] is None


@pytest.mark.parametrize("end", ["9999-12-31T00:00Z", "2026-11-30T00:00Z", "2099-01-01T00:00Z"])
def test_a_window_far_in_the_future_is_refused(end: str) -> None:
    with pytest.raises(ToolError, match="in the future"):
        window_from_args("1h", "", end, NOW)


def test_a_window_ending_later_today_is_cut_to_now_and_skew_is_allowed() -> None:
    assert window_from_args("2026-11-28T15:00Z/2026-11-28T17:00Z", "", "", NOW).end == NOW
    skewed = (NOW + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert window_from_args("1h", "", skewed, NOW).end == NOW + timedelta(minutes=2)
    assert window_from_args("1h", "", "now-1h", NOW).end == NOW - timedelta(hours=1)
    with pytest.raises(ToolError, match="in the future"):
        window_from_args("2026-01-01T00:00Z/9999-12-31T00:00Z", "", "", NOW)


def test_deeply_nested_arguments_are_a_format_error_not_a_crash() -> None:
    raw = "[" * 100_000 + "]" * 100_000
    assert too_deeply_nested(raw)
    args = args_from_json(raw)
    assert set(args) == {UNPARSED_ARGS_KEY} and "nested deeper than" in args[UNPARSED_ARGS_KEY]
    assert args_from_json('{"service": {"a": [1, 2]}}') == {"service": {"a": [1, 2]}}


def test_the_alert_question_is_cleaned_and_capped() -> None:
    alert = {
        "status": "firing",
        "labels": {"alertname": "<!channel>\u202eHigh\x00", "service": "order"},
        "annotations": {"description": "d" * 40_000},
        "startsAt": "2026-11-28T15:05:00Z",
    }
    question = question_from_alerts(AlertGroup.model_validate({"groupKey": "g", "status": "firing", "alerts": [alert]}))
    assert len(question) <= 4_000 and "\u202e" not in question and "\x00" not in question
    assert question.startswith("Alertmanager: <!channel>High is firing")  # neutralised on the way out, not here


def test_redaction_knows_twilio_mailgun_and_hex_keys_but_not_trace_ids_or_shas() -> None:
    assert "[REDACTED:twilio_key]" in redact("SK0123456789abcdef0123456789abcdef")
    assert "[REDACTED:mailgun_key]" in redact("key-3ax6xnjp29jd6fds4gc373sgvjxteol0")
    assert redact("x-api-key: 9f86d081884c7d659a2feaa0c55ad015").endswith("[REDACTED:api_key]")
    for evidence in (
        "trace_id=9f86d081884c7d659a2feaa0c55ad015",
        "trace=0af7651916cd43dd8448eb211c80319c",
        "commit 9f86d081884c7d659a2feaa0c55ad015b0a5a4f2",
        "sha=e3b0c44298fc1c149afbf4c8996fb92427ae41e4",
    ):
        assert redact(evidence) == evidence


def test_the_suite_checker_sees_what_it_looks_for() -> None:
    """The test of the test: the invariant checker flags a ping, a secret and a future window when they are there."""
    from tests.safety.hostile_corpus import Hostile
    from tests.safety.test_hostile_inputs import PINGS

    outcome = Outcome(answered=True, outbound=leaves({"text": "<!channel> hi", "blocks": [{"t": "<@U0EVIL01>"}]}))
    assert [t for t in PINGS if t in "\n".join(outcome.outbound)] == ["<!channel", "<@U0"]
    assert Hostile("g", "n", "x").empty is False
    assert visible_text("a\u200bb") == "ab"
    assert Question("q").text == "q"
