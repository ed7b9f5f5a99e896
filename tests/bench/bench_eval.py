"""`opsbot eval --playbook` as the CLI runs it: a fresh sandbox per scenario, then the diagnosis.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_eval.py -s
Prints, per scenario, the sandbox set-up time (build data, backfill, start Prometheus, stop it) next to the
diagnosis' own time, and the suite score. Asserts no timing.
"""

from __future__ import annotations

import time

from pydantic import SecretStr

from bot import wiring
from bot.config import LLMSettings, SandboxSettings, Settings, StoreSettings
from bot.engine.types import Trace
from bot.eval import EvalCase, case_from_scenario, report_to_table, run_eval
from bot.sandbox.scenario import load_scenario, scenario_names


def test_bench_eval_playbook_suite_through_the_cli_path(tmp_path):
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        llm=LLMSettings(base_url="", api_key=SecretStr("")),
        sandbox=SandboxSettings(dir=tmp_path / "sandbox"),
        store=StoreSettings(sqlite_path=tmp_path / "traces.db"),
    )
    diagnose = wiring.build_eval_diagnoser(settings)
    totals: dict[str, float] = {}

    def timed(case: EvalCase) -> Trace:
        started = time.perf_counter()
        trace = diagnose(case)
        totals[case.name] = time.perf_counter() - started
        return trace

    started = time.perf_counter()
    report = run_eval([case_from_scenario(load_scenario(n)) for n in scenario_names()], timed, mode="playbook")
    wall_s = time.perf_counter() - started
    print()
    print(report_to_table(report))
    print(f"\n{'scenario':<22} {'total s':>8} {'diagnosis s':>12} {'sandbox s':>10}")
    for result in report.results:
        total = totals.get(result.scenario, 0.0)
        print(f"{result.scenario:<22} {total:>8.2f} {result.wall_s:>12.2f} {total - result.wall_s:>10.2f}")
    print(f"suite: {report.hits}/{len(report.results)} hits in {wall_s:.1f} s wall")
    assert len(report.results) == len(scenario_names())
