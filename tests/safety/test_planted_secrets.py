"""Planted secrets: every secret shape, logged by a service during the incident, appears nowhere opsbot writes.

Each shape is planted as the top error signature of a service (with varying digits around it, which a template
shows as `<n>`), in a copy of the default sandbox's logs. Then:
- the playbook (no model) diagnoses the incident: its verdict quotes the top clusters; the trace is rendered for
  every surface (Slack text, blocks, task cards, the trace modal; the API's JSON; the CLI summary) and stored;
- a compromised model asks query_logs for every service's errors and echoes the observation, through three of
  @mention, /diagnose, DM, the API, the Alertmanager webhook and the CLI per run (alternating, so every entry
  point sees half the shapes), served as `opsbot serve` serves them.
The secret part of each shape is searched in all of it, and in everything the model was sent.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot import wiring
from bot.cli.terminal import trace_summary
from bot.engine.types import Question, Trace, trace_to_dict
from bot.safety.outbound import json_bytes
from bot.safety.redact import redact
from bot.slack.delivery.answer import trace_to_blocks, trace_to_text
from bot.slack.delivery.render import step_to_task_chunk, trace_to_modal
from bot.store.sqlite import SqliteTraceStore
from tests.eval.harness import sandbox_settings
from tests.fakes.llm import ScriptedLLM
from tests.safety.hostile_corpus import Hostile
from tests.safety.hostile_entry import ENTRY_POINTS
from tests.safety.hostile_stack import build_stack, compromised_reply
from tests.safety.secret_shapes import SECRETS
from tests.safety.test_hostile_inputs import violations
from tools.base import Toolbox, call_tool
from tools.logs.query import LogTools, SqliteLogs

SERVICES = ("order", "orders-db")  # the incident's service and its database: the playbook quotes both
CUT_KEY = re.compile(
    r"(?:ghp_|github_pat_|sk-|sk_live_|AKIA|xox[bp]-|glpat-|npm_|SG\.|AIza|SK|key-|eyJ)[\w.-]*(?:<n>|&lt;n>|&lt;n&gt;)"
)
CHUNKS = [sorted(SECRETS)[i : i + 4] for i in range(0, len(SECRETS), 4)]  # 4 shapes a run: each one a top cluster
# Each chunk goes through three served entry points (alternating halves, to keep the suite fast); every chunk
# also goes through every surface's rendering in the playbook test above.
ENTRIES_BY_CHUNK = [list(ENTRY_POINTS)[i % 2 :: 2] for i in range(len(CHUNKS))]
ECHOED = re.compile(r"checkout (?:<n>|&lt;n>|&lt;n&gt;|\d+) failed")  # a template, or a task card's example


@dataclass(frozen=True)
class PlantedSandbox:
    """The default sandbox with a planted copy of its logs."""

    prometheus_url: str
    logs_db: Path
    git_repo: Path
    topology: dict[str, list[str]]


def planted_docs(box: Any, kinds: list[str]) -> Iterator[str]:
    """Error lines carrying each secret, more of them than the scenario's own clusters (256 and 140 lines)."""
    for rank, kind in enumerate(kinds):
        line = SECRETS[kind][1]
        for n in range(700 - 50 * rank):
            yield json.dumps(
                {
                    # every shape's lines end together, so the newest lines the tool samples hold all of them
                    "@timestamp": (box.incident_at + timedelta(minutes=25, seconds=-2 * n)).strftime(
                        "%Y-%m-%dT%H:%M:%SZ"
                    ),
                    "service": SERVICES[rank % 2],
                    "level": "ERROR",
                    "logger": "com.shop.checkout.Payments",
                    "host": f"{SERVICES[rank % 2]}-7f9c-{rank}",
                    "trace_id": f"{rank + 1:02d}{'ab12' * 7}{n % 10:02d}",
                    # digits that vary around the secret: what a template shows as <n>
                    "message": f"checkout {4821 + n % 5} failed: {line} (attempt {n % 7})",
                    "stack_trace": f"java.lang.IllegalStateException: {line}\n"
                    f"\tat com.shop.Pay.charge(Pay.java:4{n % 3})",
                }
            )


def planted_sandbox(box: Any, state: Path, kinds: list[str]) -> PlantedSandbox:
    logs_db = state / "logs.db"
    shutil.copy(box.logs_db, logs_db)
    SqliteLogs(logs_db).ingest_jsonl(planted_docs(box, kinds))
    return PlantedSandbox(box.prometheus_url, logs_db, box.git_repo, box.topology)


def every_surface(trace: Trace, store_path: Path) -> str:
    """The trace as each surface writes it: Slack text, blocks, task cards, modal; API JSON; CLI; the store."""
    SqliteTraceStore(store_path).save(trace)
    slack = [
        trace_to_text(trace),
        json.dumps(trace_to_blocks(trace), ensure_ascii=False),
        json.dumps(trace_to_modal(trace), ensure_ascii=False),
        json.dumps([step_to_task_chunk(s) for s in trace.steps], ensure_ascii=False),
    ]
    stored = "".join(p.read_bytes().decode("utf-8", "replace") for p in store_path.parent.glob("traces.db*"))
    return "\n".join([*slack, json_bytes(trace_to_dict(trace)).decode(), trace_summary(trace), stored])


def test_every_shape_is_planted_once() -> None:
    assert sorted(kind for chunk in CHUNKS for kind in chunk) == sorted(SECRETS)
    assert {"twilio", "mailgun", "hex_api_key", "openai", "aws_access_key"} <= set(SECRETS)


@pytest.mark.parametrize("kinds", CHUNKS, ids=["+".join(c) for c in CHUNKS])
def test_planted_secrets_pass_the_playbooks_quotes_and_appear_nowhere(
    sandbox: Any, tmp_path: Path, kinds: list[str]
) -> None:
    box = planted_sandbox(sandbox, tmp_path, kinds)
    trace = wiring.build_responder(sandbox_settings(box, tmp_path))(Question(sandbox.scenario.question), None)
    observations = "\n".join(s.observation for s in trace.steps if s.action == "query_logs")
    assert "checkout <n> failed: " in observations  # the planted lines are the clusters the playbook read
    assert "log cluster" in trace.answer and "checkout <n> failed" in trace.answer  # ... and quoted
    assert "[REDACTED:" in trace.answer
    written = every_surface(trace, tmp_path / "traces.db")
    assert [kind for kind in kinds if SECRETS[kind][0] in written] == []
    assert CUT_KEY.findall(written) == []  # no key shape broken by a template's <n> either


def test_a_template_keeps_a_key_whole_and_the_tool_redacts_it_before_grouping(sandbox: Any, tmp_path: Path) -> None:
    """A slot is a whole token, so even redaction at the tool boundary alone sees the key's whole shape; the toolbox
    still redacts before the signatures are built, so the key is gone before any template is formed."""
    box = planted_sandbox(sandbox, tmp_path, ["github_pat"])
    settings = sandbox_settings(box, tmp_path)
    logs = LogTools(wiring.build_log_source(settings))  # no redaction before the signatures are built
    late = Toolbox([*wiring.build_metrics_tools(settings).specs(), *logs.specs()], redact=redact)
    args = {"service": "order", "level": "ERROR", "start": _iso(sandbox, -10), "end": _iso(sandbox, 40)}
    observation = call_tool(late, "query_logs", args).text
    assert "checkout <n> failed: git clone failed token [REDACTED:github_token]" in observation
    assert CUT_KEY.findall(observation) == [] and "abcdefghijklmnopqrstuvwxyz" not in observation
    fixed = call_tool(wiring.build_toolbox(settings), "query_logs", args).text
    assert "abcdefghijklmnopqrstuvwxyz" not in fixed and "[REDACTED:github_token]" in fixed


def _iso(box: Any, minutes: int) -> str:
    return (box.incident_at + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("kinds", CHUNKS, ids=["+".join(c) for c in CHUNKS])
def test_planted_secrets_reach_no_surface_through_a_compromised_model(
    sandbox: Any, scripted_llm_server: ScriptedLLM, tmp_path: Path, kinds: list[str]
) -> None:
    scripted_llm_server.reset()
    scripted_llm_server.responder = compromised_reply
    box = planted_sandbox(sandbox, tmp_path, kinds)
    stack = build_stack(box, tmp_path, scripted_llm_server)
    ask = f"tool=query_logs service=* level=ERROR start={_iso(sandbox, -10)} end={_iso(sandbox, 26)}"
    case = Hostile("planted", "+".join(kinds), ask, secrets=tuple(SECRETS[k][0] for k in kinds))
    try:
        for entry in ENTRIES_BY_CHUNK[CHUNKS.index(kinds)]:
            outcome = ENTRY_POINTS[entry](stack, ask)
            echoed = "\n".join(outcome.outbound + outcome.api)
            assert ECHOED.search(echoed), entry  # the clusters the model was shown reached the surface
            assert violations(stack, case, entry, outcome) == [], entry
            assert CUT_KEY.findall(echoed) == [], entry
    finally:
        stack.stop()
        scripted_llm_server.reset()
