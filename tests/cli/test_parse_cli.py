"""`opsbot parse`: how prompt engineers see what the parser makes of a raw model output."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from bot.cli import app

runner = CliRunner()


def test_parse_prints_the_action_it_read() -> None:
    reply = "Thought: latency first\nAction: `Query_Metrics`\nAction Input: {service: 'order',}"
    result = runner.invoke(app, ["parse", "--tool", "query_metrics"], input=reply)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "kind": "action",
        "action": "query_metrics",
        "args": {"service": "order"},
        "thought": "latency first",
        "ignored_actions": 0,
    }


def test_parse_prints_a_final_answer() -> None:
    result = runner.invoke(app, ["parse"], input="思考：够了\n最终答案：连接池耗尽")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"kind": "final", "answer": "连接池耗尽", "thought": "够了"}


def test_parse_shows_why_a_reply_was_rejected() -> None:
    result = runner.invoke(app, ["parse"], input="I think it is the database.")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["kind"] == "error"
    assert "Reply in exactly this format" in out["message"]


def test_parse_jsonl_gives_one_result_per_input_line() -> None:
    lines = [
        json.dumps('Thought: t\nAction: query_logs\nAction Input: {"service": "order"}'),
        "not json",
        "",
        json.dumps("Final Answer: pool exhausted"),
    ]
    result = runner.invoke(app, ["parse", "--jsonl"], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    outputs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["kind"] for o in outputs] == ["action", "error", "final"]
    assert outputs[0]["args"] == {"service": "order"}
    assert outputs[1]["message"] == "input line 2 is not a JSON string"
    assert outputs[2]["answer"] == "pool exhausted"
