"""No planted secret crosses the tool boundary: not to the model, not to Slack, not to the store or the logs."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.cli.terminal import trace_summary
from bot.engine.loop import run_agent
from bot.engine.types import Budget, Intent, Question, StepObserver, Trace, trace_to_dict
from bot.routing.respond import Router
from bot.safety.inbound import clean_inbound
from bot.safety.logfilter import install_redaction
from bot.safety.outbound import json_bytes, plain_text
from bot.safety.redact import redact
from bot.slack.delivery.answer import trace_to_blocks, trace_to_stream_end, trace_to_text
from bot.slack.delivery.progress import ProgressOptions
from bot.slack.intake.listeners import build_web_client
from bot.slack.jobs.backlog import SlackState
from bot.slack.jobs.runner import Runner
from bot.slack.jobs.state import Job, trace_to_memory
from bot.store.sqlite import SqliteTraceStore
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm
from tests.fakes.slack import BOT_TOKEN, FakeSlackAPI
from tests.safety.conftest import leaky_toolbox
from tests.safety.secret_shapes import SECRETS
from tools.base import call_tool

QUESTION = Question("Why is order p99 high since 15:05?", user="U1", channel="C1", source="slack")
NATIVE_SCRIPT: list[dict[str, Any]] = [
    {"content": "Read the order logs.", "tool_calls": [{"name": "read_logs", "arguments": {"service": "order"}}]},
    {"content": "Final Answer: the order DB pool is exhausted (connection timeouts in the logs)."},
]
TEXT_SCRIPT: list[dict[str, Any]] = [
    {"content": 'Thought: read the logs.\nAction: read_logs\nAction Input: {"service": "order"}'},
    {"content": "Thought: enough.\nFinal Answer: the order DB pool is exhausted."},
]


def leaked(text: str) -> list[str]:
    return [kind for kind, (secret, _) in SECRETS.items() if secret in text]


def test_the_table_covers_at_least_twenty_shapes() -> None:
    assert len(SECRETS) >= 20
    assert all(secret in line for secret, line in SECRETS.values())


def test_without_redaction_the_backend_really_leaks_every_secret() -> None:
    raw = call_tool(leaky_toolbox(redacted=False), "read_logs", {"service": "order"})
    assert leaked(raw.text) == list(SECRETS)  # the control: the test below is not vacuous


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_redaction_removes_each_shape(kind: str) -> None:
    secret, line = SECRETS[kind]
    assert secret not in redact(line)
    assert "[REDACTED:" in redact(line)


@pytest.mark.parametrize(("protocol", "script"), [("native", NATIVE_SCRIPT), ("text", TEXT_SCRIPT)])
def test_no_secret_reaches_the_model(scripted_llm: ScriptedLLM, protocol: str, script: list[dict[str, Any]]) -> None:
    scripted_llm.script(*script)
    trace = run_agent(
        QUESTION,
        scripted_openai_llm(scripted_llm),
        leaky_toolbox(),
        Budget(max_steps=4),
        protocol=protocol,  # type: ignore[arg-type]
    )
    assert trace.steps[0].action == "read_logs" and trace.steps[0].status == "ok"
    sent = json.dumps([r.body for r in scripted_llm.chat_requests], ensure_ascii=False)
    assert "[REDACTED:" in sent
    assert leaked(sent) == []


def test_no_secret_reaches_slack_or_the_store(
    scripted_llm: ScriptedLLM, fake_slack: FakeSlackAPI, tmp_path: Path
) -> None:
    scripted_llm.script(*NATIVE_SCRIPT)
    llm, store = scripted_openai_llm(scripted_llm), SqliteTraceStore(tmp_path / "traces.db")

    def responder(question: Question, on_step: StepObserver | None) -> Trace:
        return run_agent(question, llm, leaky_toolbox(), Budget(max_steps=4), on_step=on_step)

    runner = Runner(
        build_web_client(BOT_TOKEN, fake_slack.base_url),
        responder,
        persist=store.save,
        state=SlackState(),
        progress=ProgressOptions(update_interval_s=0.0),
    )
    trace = runner.run(Job(QUESTION, "C1", "1700000000.000001", react_ts="1700000000.000001", user="U1"))
    assert trace.steps[0].action == "read_logs"
    posted = json.dumps([c.params for c in fake_slack.calls], ensure_ascii=False)
    assert "pool is exhausted" in posted  # the answer did reach Slack
    assert leaked(posted) == []
    stored = store.get(trace.trace_id)
    assert stored is not None and leaked(json.dumps(stored.steps[0].observation)) == []
    store.close()
    on_disk = "".join(p.read_bytes().decode("latin-1") for p in tmp_path.glob("traces.db*"))
    assert leaked(on_disk) == []


def test_no_secret_reaches_the_logs() -> None:
    out = io.StringIO()
    logger = logging.getLogger("opsbot.test.redaction")
    logger.propagate = False
    handler = logging.StreamHandler(out)
    logger.addHandler(handler)
    install_redaction(redact, logger)
    try:
        for _, line in SECRETS.values():
            logger.warning("backend said: %s", line)
        try:
            raise RuntimeError(SECRETS["postgres_url"][1])
        except RuntimeError:
            logger.exception("query failed")
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert text.count("backend said") == len(SECRETS)
    assert "RuntimeError" in text
    assert leaked(text) == []


def test_a_pasted_secret_is_gone_after_the_inbound_pass() -> None:
    for kind, (secret, line) in SECRETS.items():
        assert secret not in clean_inbound(f"why is order slow? {line}"), kind


def test_a_secret_the_model_writes_reaches_no_door(scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    """The Router passes the model's words on as written; every boundary text leaves by redacts them: Slack's final
    message, the API's JSON, the store, the terminal and the thread memory sent back with a follow-up."""
    secret, line = SECRETS["github_pat"]
    scripted_llm.script({"content": f"Hi! {line} looks leaked."})
    router = Router(
        llm=scripted_openai_llm(scripted_llm),
        tools=leaky_toolbox(),
        budget=Budget(),
        classify=lambda text: Intent("chitchat", 0.9, "rules", "test"),
    )
    trace = router(Question("hi"))
    assert secret in trace.answer  # the control: nothing between the model and the doors redacts
    store = SqliteTraceStore(tmp_path / "traces.db")
    store.save(trace)
    store.close()
    doors = [
        trace_to_text(trace),
        json.dumps([trace_to_blocks(trace), trace_to_stream_end(trace)], ensure_ascii=False),
        json_bytes(trace_to_dict(trace)).decode(),
        plain_text(trace_summary(trace)),
        trace_to_memory(trace),
        "".join(p.read_bytes().decode("latin-1") for p in tmp_path.glob("traces.db*")),
    ]
    assert [door for door in doors if secret in door] == []
    assert all("[REDACTED:github_token]" in door for door in doors[:5])
