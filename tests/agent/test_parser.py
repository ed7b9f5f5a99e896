"""Table-driven cases for the lenient text-ReAct parser: every form models actually write, and the errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.agent.parser import EXPECTED_FORMAT, ParsedAction, ParsedFinal, ParseError, parse_reply

TOOLS = ("query_metrics", "query_logs", "query_deploy_records", "query_deploy_diff", "calculate")
SVC = {"service": "order"}

# (case id, reply, expected action, expected args, expected ignored_actions)
ACTIONS: list[tuple[str, str, str, dict[str, Any], int]] = [
    ("plain", 'Thought: check p99\nAction: query_metrics\nAction Input: {"service": "order"}', "query_metrics", SVC, 0),
    (
        "chatter_before_thought",
        'Sure! Let me look.\n\nThought: t\nAction: query_logs\nAction Input: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "json_line_comment",
        'Thought: t\nAction: query_logs\nAction Input: {"service": "order" // the caller\n}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "json_block_comment",
        'Thought: t\nAction: query_logs\nAction Input: {"service": /* svc */ "order"}',
        "query_logs",
        SVC,
        0,
    ),
    ("trailing_comma", 'Thought: t\nAction: query_logs\nAction Input: {"service": "order",}', "query_logs", SVC, 0),
    ("single_quotes", "Thought: t\nAction: query_logs\nAction Input: {'service': 'order'}", "query_logs", SVC, 0),
    (
        "python_literals",
        'Thought: t\nAction: query_logs\nAction Input: {"service": "order", "a": True, "b": None}',
        "query_logs",
        {"service": "order", "a": True, "b": None},
        0,
    ),
    (
        "unquoted_keys",
        'Thought: t\nAction: query_logs\nAction Input: {service: "order", limit: 20}',
        "query_logs",
        {"service": "order", "limit": 20},
        0,
    ),
    (
        "missing_closing_brace",
        'Thought: t\nAction: query_logs\nAction Input: {"service": "order"',
        "query_logs",
        SVC,
        0,
    ),
    (
        "code_fence",
        'Thought: t\nAction: query_logs\nAction Input:\n```json\n{"service": "order"}\n```',
        "query_logs",
        SVC,
        0,
    ),
    (
        "markdown_bold_inside",
        '**Thought:** t\n**Action:** query_logs\n**Action Input:** {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "markdown_bold_outside",
        '**Thought**: t\n**Action**: query_logs\n**Action Input**: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    ("fullwidth_colon", 'Thought： t\nAction： query_logs\nAction Input： {"service": "order"}', "query_logs", SVC, 0),
    ("chinese_labels", '思考：先看延迟\n行动：query_metrics\n行动输入：{"service": "order"}', "query_metrics", SVC, 0),
    ("any_case", 'THOUGHT: t\naction: query_logs\nACTION INPUT: {"service": "order"}', "query_logs", SVC, 0),
    (
        "numbered_labels",
        'Thought 2: t\nAction 2: query_logs\nAction 2 Input 2: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "numbered_list_labels",
        '1. Thought: t\n2. Action: query_logs\n3. Action Input: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "snake_case_input_label",
        'Thought: t\nAction: query_logs\nAction_Input: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "xml_tags",
        '<thought>t</thought>\n<action>query_logs</action>\n<action_input>{"service": "order"}</action_input>',
        "query_logs",
        SVC,
        0,
    ),
    (
        "xml_tags_one_line",
        '<thought>t</thought><action>query_logs</action><action_input>{"service": "order"}</action_input>',
        "query_logs",
        SVC,
        0,
    ),
    ("bracket_style", 'Thought: t\nAction: query_logs[{"service": "order"}]', "query_logs", SVC, 0),
    (
        "function_call_style",
        'Thought: t\nAction: query_logs(service="order", limit=2)',
        "query_logs",
        {"service": "order", "limit": 2},
        0,
    ),
    (
        "function_call_json_literals",
        "Thought: t\nAction: query_logs(service='order', flag=true, x=null)",
        "query_logs",
        {"service": "order", "flag": True, "x": None},
        0,
    ),
    ("function_call_dict_arg", 'Thought: t\nAction: query_logs({"service": "order"})', "query_logs", SVC, 0),
    (
        "keyword_style_input",
        'Thought: t\nAction: query_logs\nAction Input: service="order", limit=5',
        "query_logs",
        {"service": "order", "limit": 5},
        0,
    ),
    ("backticked_tool", 'Thought: t\nAction: `query_logs`\nAction Input: {"service": "order"}', "query_logs", SVC, 0),
    ("tool_name_case", 'Thought: t\nAction: Query_Logs\nAction Input: {"service": "order"}', "query_logs", SVC, 0),
    (
        "tool_name_in_prose",
        'Thought: t\nAction: I will use query_logs.\nAction Input: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    ("tool_name_in_chinese_prose", '行动：使用query_logs工具\n行动输入：{"service": "order"}', "query_logs", SVC, 0),
    ("inline_json_after_name", 'Thought: t\nAction: query_logs {"service": "order"}', "query_logs", SVC, 0),
    (
        "json_block_without_input_label",
        'Thought: t\nAction: query_logs\n```json\n{"service": "order"}\n```',
        "query_logs",
        SVC,
        0,
    ),
    (
        "json_action_object",
        'Thought: t\nAction: {"action": "query_logs", "action_input": {"service": "order"}}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "bare_json_reply",
        '{"thought": "t", "action": "query_logs", "action_input": {"service": "order"}}',
        "query_logs",
        SVC,
        0,
    ),
    ("no_input_means_no_args", "Thought: t\nAction: query_deploy_records", "query_deploy_records", {}, 0),
    (
        "two_actions_first_wins",
        'Thought: t\nAction: query_logs\nAction Input: {"service": "order"}\nAction: query_metrics\nAction Input: {}',
        "query_logs",
        SVC,
        1,
    ),
    (
        "invented_observation_ignored",
        'Thought: t\nAction: query_logs\nAction Input: {"service": "order"}\nObservation: 42 errors\n'
        "Thought: so\nAction: query_metrics\nAction Input: {}\nFinal Answer: made up",
        "query_logs",
        SVC,
        0,
    ),
    (
        "second_json_object_ignored",
        'Thought: t\nAction: query_logs\nAction Input: {"service": "order"} {"x": 1}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "trailing_prose_after_json",
        'Thought: t\nAction: query_logs\nAction Input: {"service": "order"}\nI will wait.',
        "query_logs",
        SVC,
        0,
    ),
    (
        "whole_reply_fenced",
        '```\nThought: t\nAction: query_logs\nAction Input: {"service": "order"}\n```',
        "query_logs",
        SVC,
        0,
    ),
    (
        "mix_bold_chinese_fence",
        "**思考：** t\n**行动：** `query_logs`\n**行动输入：**\n```json\n{service: 'order',}\n```",
        "query_logs",
        SVC,
        0,
    ),
    (
        "mix_xml_broken_json_observation",
        '<thought>t</thought><action>query_logs</action><action_input>{"service": "order"</action_input>'
        "<observation>fake</observation><action>calculate</action>",
        "query_logs",
        SVC,
        0,
    ),
    (
        "labels_run_into_one_line",
        'Thought: latency first. Action: query_logs Action Input: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    ("chinese_labels_run_in", '思考：先看日志。行动：query_logs\n行动输入：{"service": "order"}', "query_logs", SVC, 0),
    (
        "markdown_heading_labels",
        '## Thought\nt\n## Action\nquery_logs\n## Action Input\n{"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "hermes_tool_call_tag",
        'Thought: t\n<tool_call>\n{"name": "query_logs", "arguments": {"service": "order"}}\n</tool_call>',
        "query_logs",
        SVC,
        0,
    ),
    (
        "think_block_drafts_are_ignored",
        "<think>maybe\nAction: query_metrics</think>\n"
        'Thought: t\nAction: query_logs\nAction Input: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "yaml_style_input",
        "Thought: t\nAction: query_logs\nAction Input:\nservice: order\nlimit: 20",
        "query_logs",
        {"service": "order", "limit": "20"},
        0,
    ),
    (
        "json_encoded_string_input",
        'Thought: t\nAction: query_logs\nAction Input: "{\\"service\\": \\"order\\"}"',
        "query_logs",
        SVC,
        0,
    ),
    (
        "bracketed_tool_name",
        'Thought: t\nAction: [query_logs]\nAction Input: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "functions_prefix",
        'Thought: t\nAction: functions.query_logs\nAction Input: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "prose_with_action_word_is_not_split",
        'Thought: the next Action: unclear\nAction: query_logs\nAction Input: {"service": "order"}',
        "query_logs",
        SVC,
        0,
    ),
    (
        "crlf_line_endings",
        'Thought: t\r\nAction: query_logs\r\nAction Input: {"service": "order"}\r\n',
        "query_logs",
        SVC,
        0,
    ),
]

# (case id, reply, expected answer)
FINALS: list[tuple[str, str, str]] = [
    (
        "final_answer_label",
        "Thought: done\nFinal Answer: order v2.8.1 raised the pool size",
        "order v2.8.1 raised the pool size",
    ),
    (
        "finish_action_json",
        'Thought: done\nAction: finish\nAction Input: {"answer": "pool exhausted"}',
        "pool exhausted",
    ),
    (
        "finish_action_broken_json",
        "Thought: done\nAction: Finish\nAction Input: {'answer': 'pool exhausted'",
        "pool exhausted",
    ),
    ("finish_action_plain_text", "Thought: done\nAction: finish\nAction Input: pool exhausted", "pool exhausted"),
    ("finish_function_call", 'Thought: done\nAction: finish(answer="pool exhausted")', "pool exhausted"),
    ("chinese_final", "思考：够了\n最终答案：连接池耗尽", "连接池耗尽"),
    ("xml_final", "<thought>done</thought><final_answer>pool exhausted</final_answer>", "pool exhausted"),
    ("bold_final", "**Final Answer:** pool exhausted", "pool exhausted"),
    (
        "final_keeps_code_block_and_action_words",
        "Thought: done\nFinal Answer: pool exhausted\n```yaml\nmaximumPoolSize: 200\n```\nAction: roll back order",
        "pool exhausted\n```yaml\nmaximumPoolSize: 200\n```\nAction: roll back order",
    ),
    ("final_in_fenced_reply", "```\nThought: done\nFinal Answer: pool exhausted\n```", "pool exhausted"),
    ("final_then_invented_observation", "Final Answer: pool exhausted\nObservation: thanks", "pool exhausted"),
    ("none_action_then_final", "Thought: enough\nAction: None\nFinal Answer: pool exhausted", "pool exhausted"),
    ("empty_action_then_final", "Thought: enough\nAction:\nFinal Answer: pool exhausted", "pool exhausted"),
    ("final_run_into_thought_line", "Thought: enough. Final Answer: pool exhausted", "pool exhausted"),
    ("bare_json_finish", '{"action": "finish", "action_input": {"answer": "pool exhausted"}}', "pool exhausted"),
]

# (case id, reply, words the error must mention)
ERRORS: list[tuple[str, str, str]] = [
    ("empty", "", "empty"),
    ("whitespace", "   \n ", "empty"),
    ("no_labels", "The root cause is the pool size.", "no Thought"),
    ("thought_only", "Thought: I should look at the metrics.", "no Action"),
    ("input_not_json", "Thought: t\nAction: query_logs\nAction Input: the order service please", "not a JSON object"),
    ("empty_final", "Thought: t\nFinal Answer:   ", "empty"),
    ("finish_without_answer", "Thought: t\nAction: finish\nAction Input: {}", "empty"),
    ("json_action_without_name", 'Thought: t\nAction: {"action_input": {"service": "order"}}', "tool name"),
    ("call_with_positional_text", "Thought: t\nAction: query_logs(order, errors)", "keyword arguments"),
    ("none_action_alone", "Thought: t\nAction: None", "no Action"),
    ("only_a_think_block", "<think>Action: query_logs</think>", "empty"),
    ("input_is_a_list", "Thought: t\nAction: query_logs\nAction Input: [1, 2]", "not a JSON object"),
]


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
    assert isinstance(parsed, ParsedAction | ParseError)
