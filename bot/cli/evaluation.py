"""`opsbot eval`: every sandbox scenario diagnosed through the full path, scored, and kept in the trace store."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import SecretStr

from bot.cli.terminal import mode_line
from bot.eval import EvalCase, case_from_scenario, report_to_dict, report_to_table, run_eval, runs_to_table
from bot.sandbox.scenario import ScenarioError, load_scenario, scenario_names

if TYPE_CHECKING:  # pydantic-settings loads when a command reads settings, not for --help
    from bot.config import Settings


def eval_command(
    scenario: Annotated[
        list[str] | None, typer.Option("--scenario", metavar="NAME", help="run only these (repeatable)")
    ] = None,
    model: Annotated[
        str, typer.Option("--model", metavar="NAME", help="the model to measure (default: OPSBOT_LLM__MODEL)")
    ] = "",
    playbook: Annotated[
        bool, typer.Option("--playbook", help="measure the playbook even if an LLM is configured")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON instead of a table")] = False,
    history: Annotated[
        int, typer.Option("--history", metavar="N", help="print the last N stored runs instead of running")
    ] = 0,
) -> None:
    """Diagnose every sandbox scenario through the full path and score it; the run is kept in the trace store."""
    from bot import wiring

    settings = _eval_settings(wiring.load_settings(), model, playbook)
    if history:
        typer.echo(runs_to_table(wiring.build_store(settings).eval_runs(history)))
        return
    cases = _eval_cases(scenario or scenario_names())
    mode = "model" if settings.llm.configured else "playbook"
    if model and mode == "playbook":
        typer.echo(f"eval: --model {model} given, but no LLM is configured (or --playbook): measuring the playbook.",
                   err=True)
    typer.echo(f"eval: {len(cases)} scenarios, {mode}. {mode_line(settings)}", err=True)
    report = run_eval(
        cases, wiring.build_eval_diagnoser(settings), mode=mode, model=settings.llm.model if mode == "model" else "",
        on_result=lambda r: typer.echo(f"  {r.scenario}: {'hit' if r.hit else 'MISS'} ({r.wall_s:.1f} s)", err=True),
    )
    result = report_to_dict(report)
    _save_run(settings, result)
    typer.echo(json.dumps(result, ensure_ascii=False, indent=2) if as_json else report_to_table(report))


def _eval_cases(names: list[str]) -> list[EvalCase]:
    try:
        return [case_from_scenario(load_scenario(name)) for name in names]
    except ScenarioError as exc:
        raise typer.BadParameter(str(exc), param_hint="--scenario") from exc


def _save_run(settings: Settings, result: dict[str, Any]) -> None:
    from bot import wiring

    try:
        wiring.build_store(settings).save_eval_run(result)
    except Exception as exc:  # the report is still printed; only its history entry is lost
        typer.echo(f"eval: could not store the run: {exc}", err=True)


def _eval_settings(settings: Settings, model: str, playbook: bool) -> Settings:
    llm = settings.llm
    if playbook:
        llm = llm.model_copy(update={"base_url": "", "api_key": SecretStr("")})
    if model:
        llm = llm.model_copy(update={"model": model})
    return settings.model_copy(update={"llm": llm})
