"""The responder, the path every surface runs, against a naive openai loop on the same scripted 8-step run.

bench_naive.py measures opsbot's loop alone. This bench measures what a surface calls: the Router, built the way
wiring builds it (`wiring.build_responder` from Settings, the tools wrapped as `wiring.build_toolbox` wraps them:
secrets redacted at the tool boundary), called the way a surface calls it (the question through the inbound pass,
a step observer, the intent gate deciding the route). The tools and the script are bench_naive's: the hikari-pool
investigation over the sandbox's raw backend answers (recorded once, replayed), 7 tool calls then the answer, over
the loopback ScriptedLLM. Each run's tool answers carry the run's number, so they differ from run to run as they do
from question to question: nothing remembered from an earlier run can make a later one cheaper. Runs of the naive
loop and of the responder are interleaved so load weighs on both alike; CPU is process CPU per step (it includes the
ScriptedLLM's server thread for both). The first round (first-use imports, compiled rules) is reported apart.

Import + build: `from bot import wiring; wiring.build_responder(wiring.load_settings())` in a fresh interpreter,
with a model configured (the LLM adapter and openai load, as on a served process) and without (the playbook path).

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_responder.py -s
Prints numbers; asserts no timing.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from bot import wiring
from bot.config import Settings
from bot.engine.types import Question, Step
from bot.safety.inbound import clean_inbound
from tests.bench.bench_naive import ANSWER, QUESTION, STEPS, Investigation, _script, naive_run
from tests.bench.rawtools import raw_investigation, raw_toolbox, record
from tests.fakes.backends import RunningSandbox
from tests.fakes.llm import MODEL, ScriptedLLM
from tools.base import Toolbox

RUNS = 12
BUILDS = 7
ROOT = Path(__file__).resolve().parents[2]
CONTENDERS = ("naive openai loop", "opsbot responder")
BUILD = (
    "import time; t, c = time.perf_counter(), time.process_time(); from bot import wiring; "
    "s = wiring.load_settings(); r = wiring.build_responder(s); "
    "print(f'{(time.perf_counter() - t) * 1000:.1f} {(time.process_time() - c) * 1000:.1f}')"
)


def responder_settings(scripted: ScriptedLLM) -> Settings:
    """What a served process reads: the model at the ScriptedLLM, the gates at 8 steps and no token limit."""
    values: dict[str, Any] = {
        "llm": {"base_url": scripted.base_url, "api_key": "test", "model": MODEL, "max_retries": 1, "timeout_s": 10.0},
        "agent": {"max_steps": STEPS, "token_budget": 10**9},
    }
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def build_bench_responder(scripted: ScriptedLLM, tools: Toolbox) -> Callable[[], str]:
    """One responder, built once as a process builds it; each call answers the question as a surface asks it."""
    from bot.wiring.basics import redact_on_first_use

    guarded = Toolbox(list(tools), redact=redact_on_first_use)  # as wiring.build_toolbox wraps every tool
    responder = wiring.build_responder(responder_settings(scripted), tools=guarded)

    def ask() -> str:
        seen: list[Step] = []
        trace = responder(Question(clean_inbound(QUESTION), source="api"), seen.append)
        assert trace.complete and len(trace.steps) == STEPS, (trace.stop_reason, trace.notes)
        assert trace.intent is not None and trace.intent.route == "diagnose", trace.intent
        return trace.answer

    return ask


class PerRun(dict[str, str]):
    """The recorded backend answers, each ending with the number of the run that asks for it."""

    run = 0

    def get(self, key: str, default: str = "") -> str:  # type: ignore[override]
        return f"{super().get(key, default)}\n(run {self.run})"


def side_by_side(scripted: ScriptedLLM, recorded: PerRun, investigation: Investigation) -> dict[str, list[float]]:
    """CPU ms per step of each contender: the first round, then RUNS interleaved runs over the same script."""
    tools = raw_toolbox(recorded)
    client = openai.OpenAI(base_url=scripted.base_url, api_key="test", max_retries=1, timeout=10.0)
    ask = build_bench_responder(scripted, tools)
    cpu: dict[str, list[float]] = {f"{name} {kind}": [] for kind in ("first", "warm") for name in CONTENDERS}
    for run in range(RUNS + 1):
        for name in CONTENDERS:
            recorded.run += 1
            _script(scripted, investigation)
            started = time.process_time()
            answer = naive_run(client, tools) if name.startswith("naive") else ask()
            spent = (time.process_time() - started) * 1000 / STEPS
            assert ANSWER in answer, answer
            assert len(scripted.chat_requests) == STEPS, "the intent gate must not have asked the model"
            cpu[f"{name} {'warm' if run else 'first'}"].append(spent)
    return cpu


def test_responder_cpu_per_step_against_a_naive_openai_loop(
    scripted_llm: ScriptedLLM, sandbox: RunningSandbox, es_sandbox: str
) -> None:
    investigation = raw_investigation(sandbox.incident_at)
    calls = [(action, args) for _, action, args in investigation]
    recorded = PerRun(record(sandbox.prometheus_url, es_sandbox, sandbox.git_repo, calls, 10))
    cpu = side_by_side(scripted_llm, recorded, investigation)
    print(f"\n{RUNS} interleaved runs x {STEPS} steps, loopback ScriptedLLM, raw backend payloads (10 hits a search)")
    print(f"{'contender':<26} {'CPU ms/step median':>19} {'min':>6} {'max':>6}")
    for name, samples in cpu.items():
        print(f"{name:<26} {statistics.median(samples):19.2f} {min(samples):6.2f} {max(samples):6.2f}")
    for kind in ("first", "warm"):
        naive, responder = (statistics.median(cpu[f"{name} {kind}"]) for name in CONTENDERS)
        print(
            f"responder / naive CPU per step, {kind} {'round' if kind == 'first' else 'runs'}: {responder / naive:.2f}x"
        )


@pytest.mark.parametrize("model", ["with a model", "without a model"])
def test_import_and_build_of_the_responder_in_a_fresh_interpreter(tmp_path: Path, model: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    env |= {"OPSBOT_STORE__SQLITE_PATH": str(tmp_path / "traces.db"), "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9"}
    if model == "with a model":
        env |= {"OPSBOT_LLM__BASE_URL": "http://127.0.0.1:9/v1", "OPSBOT_LLM__API_KEY": "k", "OPSBOT_LLM__MODEL": "m"}
    # bytecode first, as an installed package has it (an editable tree under PYTHONDONTWRITEBYTECODE would not)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "bot", "tools", "prompts"], cwd=ROOT, check=True)
    walls, cpus = [], []
    for _ in range(BUILDS):
        done = subprocess.run(
            [sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, check=True, cwd=ROOT
        )
        wall, cpu = done.stdout.strip().splitlines()[-1].split()
        walls.append(float(wall))
        cpus.append(float(cpu))
    print(
        f"\nimport + build of the responder ({model}), {BUILDS} fresh interpreters: wall median "
        f"{statistics.median(walls):.0f} ms (min {min(walls):.0f}), CPU median {statistics.median(cpus):.0f} ms "
        f"(min {min(cpus):.0f})"
    )
