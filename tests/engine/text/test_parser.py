"""Table-driven cases for the lenient text-ReAct parser: every form models actually write, and the errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.engine.text.parser import EXPECTED_FORMAT, ParsedAction, ParsedFinal, ParseError, parse_reply
from tests.engine.text.parser_cases import ACTIONS, ERRORS, FINALS, TOOLS


@pytest.mark.parametrize(("reply", "action", "args", "ignored"), [c[1:] for c in ACTIONS], ids=[c[0] for c in ACTIONS])
def test_action_forms_are_read(reply: str, action: str, args: dict[str, Any], ignored: int) -> None:
    parsed = parse_reply(reply, TOOLS)
    assert parsed == ParsedAction(thought=parsed.thought, action=action, args=args, ignored_actions=ignored)
    assert isinstance(parsed, ParsedAction)


@pytest.mark.parametrize(("reply", "answer"), [c[1:] for c in FINALS], ids=[c[0] for c in FINALS])
def test_final_forms_are_read(reply: str, answer: str) -> None:
    parsed = parse_reply(reply, TOOLS)
    assert isinstance(parsed, ParsedFinal), parsed
    assert parsed.answer == answer


@pytest.mark.parametrize(("reply", "reason"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_unreadable_replies_become_errors_that_quote_the_format(reply: str, reason: str) -> None:
    parsed = parse_reply(reply, TOOLS)
    assert isinstance(parsed, ParseError), parsed
    assert reason in parsed.message
    assert EXPECTED_FORMAT in parsed.message


def test_thought_is_kept_with_the_action() -> None:
    parsed = parse_reply('Sure.\nThought: p99 jumped at 15:05\nAction: query_logs\nAction Input: {"service": "x"}')
    assert isinstance(parsed, ParsedAction)
    assert parsed.thought == "p99 jumped at 15:05"


def test_chatter_is_the_thought_when_there_is_no_thought_label() -> None:
    parsed = parse_reply('Latency first.\nAction: query_metrics\nAction Input: {"service": "x"}')
    assert isinstance(parsed, ParsedAction)
    assert parsed.thought == "Latency first."


def test_the_thought_nearest_the_action_wins() -> None:
    parsed = parse_reply("Thought 1: a\nThought 2: b\nFinal Answer: c")
    assert parsed == ParsedFinal(thought="b", answer="c")


def test_error_keeps_the_thought() -> None:
    parsed = parse_reply("Thought: look at logs\nAction: query_logs\nAction Input: nonsense here")
    assert isinstance(parsed, ParseError)
    assert parsed.thought == "look at logs"


def test_unknown_tool_name_is_passed_on_for_call_tool_to_explain() -> None:
    parsed = parse_reply('Thought: t\nAction: restart_pod\nAction Input: {"pod": "x"}', TOOLS)
    assert parsed == ParsedAction("t", "restart_pod", {"pod": "x"})


def test_names_are_kept_verbatim_without_a_tool_list() -> None:
    parsed = parse_reply('Thought: t\nAction: Query_Logs\nAction Input: {"service": "x"}')
    assert isinstance(parsed, ParsedAction)
    assert parsed.action == "Query_Logs"


def test_action_before_final_answer_wins() -> None:
    parsed = parse_reply('Thought: t\nAction: query_logs\nAction Input: {"service": "x"}\nFinal Answer: guess', TOOLS)
    assert isinstance(parsed, ParsedAction)
    assert parsed.action == "query_logs"


def test_observation_quoted_before_any_action_is_not_a_cut() -> None:
    reply = 'Observation: p99 1,180 ms\nThought: check logs\nAction: query_logs\nAction Input: {"service": "x"}'
    parsed = parse_reply(reply, TOOLS)
    assert isinstance(parsed, ParsedAction)
    assert parsed.thought == "check logs"


def test_python_only_literals_become_json_values() -> None:
    parsed = parse_reply("Thought: t\nAction: query_logs(ids=(1, 2), tags={'b', 'a'}, raw=b'x', z=1j)", TOOLS)
    assert isinstance(parsed, ParsedAction)
    assert parsed.args == {"ids": [1, 2], "tags": ["a", "b"], "raw": "x", "z": "1j"}
    json.dumps(parsed.args)


def test_runaway_input_is_refused() -> None:
    reply = 'Thought: t\nAction: query_logs\nAction Input: {"query": "' + "x" * 30_000 + '"}'
    parsed = parse_reply(reply, TOOLS)
    assert isinstance(parsed, ParseError)
    assert "characters" in parsed.message


def test_deeply_nested_call_does_not_crash() -> None:
    parsed = parse_reply("Thought: t\nAction: query_logs(a=" + "[" * 5_000 + "]" * 5_000 + ")", TOOLS)
    # Too deep to read safely: a format error the model can act on, not a RecursionError that ends the run.
    assert isinstance(parsed, ParseError)
    assert "keyword arguments (name=value)" in parsed.message and "Action Input:" in parsed.message
