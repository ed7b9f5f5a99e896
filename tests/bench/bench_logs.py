"""The tokens of query_logs' observations in the default scenario's diagnosis, as stored and as the model sees them.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_logs.py -s
Two runs of the default question through the full path: the playbook (no model), and the ScriptedLLM replay of a
model run. For each query_logs step it prints the observation's tokens whole and after the engine's cut at
max_observation_chars (what the model reads of it); SHOW=1 prints the observations. It asserts only that the runs
called query_logs.
"""

from __future__ import annotations

import os
from typing import Any

from bot import wiring
from bot.engine.context import truncate_observation
from bot.engine.types import Question, Trace
from tests.eval.harness import replay_for, sandbox_settings
from tests.eval.test_suite import intent_or

try:
    from bot.engine.tokens import count_tokens
except ImportError:  # the offline tokenizer is not installed: count characters / 4 instead

    def count_tokens(text: str, encoding: str = "") -> int:
        return len(text) // 4


def _log_rows(trace: Trace, cap: int) -> list[tuple[str, int, int, int]]:
    rows = []
    for step in trace.steps:
        if step.action == "query_logs":
            shown = truncate_observation(step.observation, cap)
            rows.append(
                (str(step.args)[:90], len(step.observation), count_tokens(step.observation), count_tokens(shown))
            )
    return rows


def _print(title: str, rows: list[tuple[str, int, int, int]]) -> None:
    print(f"\n{title}")
    print(f"{'chars':>6} {'tokens':>6} {'seen':>6}  args")
    for args, chars, whole, seen in rows:
        print(f"{chars:>6,} {whole:>6,} {seen:>6,}  {args}")
    print(f"{sum(r[1] for r in rows):>6,} {sum(r[2] for r in rows):>6,} {sum(r[3] for r in rows):>6,}  in all")


def test_bench_log_observation_tokens(sandbox: Any, tmp_path: Any, scripted_llm_server: Any) -> None:
    settings = sandbox_settings(sandbox, tmp_path)
    cap = settings.agent.max_observation_chars
    playbook = wiring.build_responder(settings, clock=lambda: sandbox.now)(Question(sandbox.scenario.question), None)
    scripted_llm_server.reset()
    scripted_llm_server.responder = intent_or(replay_for("hikari-pool", sandbox))
    model_settings = sandbox_settings(sandbox, tmp_path, llm_base_url=scripted_llm_server.base_url)
    replay = wiring.build_responder(model_settings, clock=lambda: sandbox.now)(
        Question(sandbox.scenario.question), None
    )
    scripted_llm_server.reset()
    rows = {"playbook": _log_rows(playbook, cap), "replay": _log_rows(replay, cap)}
    for step in [*playbook.steps, *replay.steps]:
        if step.action == "query_logs" and os.environ.get("SHOW"):
            print(step.observation)
    for title, found in rows.items():
        _print(f"query_logs observations, {title} (cap {cap:,} characters)", found)
    assert rows["playbook"] and rows["replay"]
