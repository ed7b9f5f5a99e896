"""A 👎 on a routed message, end to end: clicked in Slack, stored with the gate's choice, exported with a suggested
label, and trained on in one step."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.engine.types import Budget
from bot.http.server import RunningServer, route, slack_app, start_server
from bot.routing.feedback import labelled_line, suggested_route
from bot.routing.intent import classify
from bot.routing.model import shipped_model
from bot.routing.respond import Router
from bot.slack.delivery.render import ACTION_VOTE_DOWN
from bot.slack.intake.listeners import build_app, build_web_client
from bot.slack.jobs.backlog import Lanes, SlackState
from bot.slack.jobs.runner import Runner
from bot.slack.jobs.state import MemoryDedupe
from bot.store.sqlite import SqliteTraceStore
from tests.fakes.slack import (
    BOT_TOKEN,
    SIGNING_SECRET,
    FakeSlackAPI,
    event_body,
    mention_event,
    post_event,
    post_interaction,
)
from tools.base import Toolbox


@pytest.fixture
def slack_with_store(fake_slack: FakeSlackAPI, tmp_path: Path) -> Iterator[tuple[str, SqliteTraceStore]]:
    """The real gate and Router (no LLM) behind the Bolt app, persisting to and voting into a real SQLite store."""
    store = SqliteTraceStore(tmp_path / "traces.db")
    router = Router(llm=None, tools=Toolbox([]), budget=Budget(), classify=classify)
    runner = Runner(
        build_web_client(BOT_TOKEN, fake_slack.base_url),
        router,
        persist=store.save,
        state=SlackState(MemoryDedupe(900)),
        lanes=Lanes(workers=2, queue_size=8),
    )
    bolt = build_app(
        runner, signing_secret=SIGNING_SECRET, fetch_trace=store.get, record_feedback=store.record_feedback
    )
    runner.start()
    server: RunningServer = start_server(route({"/slack/": slack_app(bolt)}), "127.0.0.1", 0, threads=4)
    yield f"{server.url}/slack/events", store
    server.stop()
    runner.stop(timeout_s=1)
    store.close()


def thumbs_down(url: str, trace_id: str) -> None:
    payload = {
        "type": "block_actions",
        "api_app_id": "A1",
        "token": "x",
        "trigger_id": "trig-1",
        "user": {"id": "U2"},
        "team": {"id": "T1"},
        "channel": {"id": "C1"},
        "container": {"type": "message", "message_ts": "1700000000.000009", "channel_id": "C1"},
        "message": {"ts": "1700000000.000009", "thread_ts": "1699999999.000100", "text": "Answer"},
        "actions": [
            {
                "action_id": ACTION_VOTE_DOWN,
                "block_id": "opsbot_controls",
                "value": trace_id,
                "type": "button",
                "action_ts": "1700000001.0",
            }
        ],
    }
    assert post_interaction(url, payload).status_code == 200


def wait_for_trace(store: SqliteTraceStore, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if stored := store.list(1):
            return stored[0].trace_id
        time.sleep(0.05)
    raise AssertionError("no trace was stored")


def test_a_thumbs_down_in_slack_is_exported_with_the_gates_route_and_a_suggested_label(
    slack_with_store: tuple[str, SqliteTraceStore], fake_slack: FakeSlackAPI, tmp_path: Path
) -> None:
    url, store = slack_with_store
    post_event(url, event_body(mention_event("hello there, good morning!")))
    trace_id = wait_for_trace(store)
    thumbs_down(url, trace_id)
    fake_slack.wait_for("chat.postEphemeral", where=lambda p: "missed" in str(p.get("text", "")))
    env = {"OPSBOT_STORE__BACKEND": "sqlite", "OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db")}
    review = tmp_path / "review.jsonl"
    result = CliRunner().invoke(app, ["intent", "export", "--out", str(review)], env=env)
    assert result.exit_code == 0, result.output
    [line] = [json.loads(row) for row in review.read_text(encoding="utf-8").splitlines()]
    assert line["text"] == "hello there, good morning!" and line["trace_id"] == trace_id
    assert line["route"] == ""  # a person's label, never filled in by the export
    assert (line["routed_as"], line["tier"]) == ("chitchat", "classifier") and line["probability"] >= 0.6
    assert line["suggested_route"] == "diagnose"  # a 👎 on a non-diagnosis route most likely meant "investigate"

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"text": t, "route": r, "split": "train"}) + "\n"
            for t, r in [
                ("why is order slow", "diagnose"),
                ("hi", "chitchat"),
                ("help", "help"),
                ("p99 of cart now", "lookup"),
                ("restart cart", "act"),
            ]
        ),
        encoding="utf-8",
    )
    out = tmp_path / "retrained.json.gz"
    args = ["intent", "train", "--corpus", str(corpus), "--extra", str(review), "--out", str(out)]
    assert "5 to train" in CliRunner().invoke(app, args).output  # unlabelled: not trained on
    result = CliRunner().invoke(app, [*args, "--accept-suggestions"])
    assert result.exit_code == 0, result.output
    assert "6 to train" in result.output and out.exists()  # one step: the suggestion became the label


def test_the_suggestion_flips_diagnose_and_the_rest() -> None:
    model = shipped_model()
    assert suggested_route("can you restart cart", "diagnose", model) not in ("diagnose", "")
    assert suggested_route("what is the p99 of order now", "lookup", model) == "diagnose"
    assert suggested_route("anything", "", model) == ""  # no recorded route: nothing to suggest


def test_a_reviewed_label_wins_over_the_suggestion() -> None:
    line = {"text": "x", "route": "lookup", "suggested_route": "diagnose", "split": "heldout"}
    assert labelled_line(line, accept_suggestions=True) == {**line, "route": "lookup", "split": "train"}
    assert labelled_line({**line, "route": ""}, accept_suggestions=False) is None
