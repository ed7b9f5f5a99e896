"""`opsbot eval`: every sandbox scenario diagnosed through the full path, scored, and kept in the trace store."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import SecretStr

from bot.cli.terminal import mode_line
from bot.eval import (
    EvalCase,
    case_from_scenario,
    clocks_to_dict,
    clocks_to_table,
    report_to_dict,
    report_to_table,
    run_clocks,
    run_eval,
    runs_to_table,
    score_trace,
    spread_clocks,
)
from bot.eval.replay import recorded_toolbox, replay_summary
from bot.sandbox.scenario import HELDOUT, ScenarioError, load_scenario, scenario_files, scenario_names

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
    scenarios: Annotated[
        Path | None, typer.Option("--scenarios", metavar="DIR", help="run a team's own scenario .toml files")
    ] = None,
    heldout: Annotated[
        bool, typer.Option("--heldout", help="run the held-out scenarios (never tuned on) instead of the suite")
    ] = False,
    from_trace: Annotated[
        str, typer.Option("--from-trace", metavar="ID", help="replay a stored trace's observations to the model")
    ] = "",
    expect: Annotated[
        list[str] | None, typer.Option("--expect", metavar="FACT", help="with --from-trace: facts the headline names")
    ] = None,
    at: Annotated[
        str,
        typer.Option(
            "--at",
            metavar="TIME",
            help="run as if the UTC clock read TIME: HH:MM (its last "
            "occurrence) or ISO 8601; e.g. 00:05 puts every incident window across midnight",
        ),
    ] = "",
    relay: Annotated[
        Path | None,
        typer.Option(
            "--relay",
            metavar="DIR",
            help="measure the model path with a reasoner that answers through files in DIR (README.md there says how)",
        ),
    ] = None,
    relay_wait: Annotated[
        float, typer.Option("--relay-wait", metavar="SECONDS", help="with --relay: how long one reply may take")
    ] = 1800.0,
    clocks: Annotated[
        str,
        typer.Option(
            "--clocks",
            metavar="N|TIMES",
            help="run at several UTC clocks: N spread over the day ending now (or at --at), or a comma-separated "
            "list of HH:MM / ISO times; a scenario is a hit only when it hits at every clock",
        ),
    ] = "",
) -> None:
    """Diagnose every sandbox scenario through the full path and score it; the run is kept in the trace store.

    The headline (the named cause) is scored apart from the evidence: a fact found only in the evidence is no hit,
    and a headline that names one of the scenario's decoys (must_not_name) is a miss.
    """
    from bot import wiring

    settings = _eval_settings(wiring.load_settings(), model, playbook)
    if relay is not None:
        _relay_eval(settings, relay, relay_wait, _scenario_refs(scenario, scenarios, heldout), at, as_json)
        return
    if history:
        typer.echo(runs_to_table(wiring.build_store(settings).eval_runs(history)))
        return
    if from_trace:
        replay_trace_command(settings, from_trace, expect or [], as_json)
        return
    refs, scenario_set = _scenario_refs(scenario, scenarios, heldout)
    cases = _eval_cases(refs)
    mode = "model" if settings.llm.configured else "playbook"
    if model and mode == "playbook":
        typer.echo(
            f"eval: --model {model} given, but no LLM is configured (or --playbook): measuring the playbook.", err=True
        )
    typer.echo(f"eval: {len(cases)} scenarios ({scenario_set}), {mode}. {mode_line(settings)}", err=True)
    if clocks.strip():
        _eval_at_clocks(settings, cases, _clocks(clocks, at), mode, scenario_set, as_json)
        return
    run_clock = _run_clock(at)
    if run_clock is not None:
        typer.echo(f"eval: run clock {run_clock:%Y-%m-%d %H:%M} UTC (--at {at})", err=True)
    report = run_eval(
        cases,
        wiring.build_eval_diagnoser(settings, run_clock),
        mode=mode,
        model=settings.llm.model if mode == "model" else "",
        on_result=lambda r: typer.echo(f"  {r.scenario}: {'hit' if r.hit else 'MISS'} ({r.wall_s:.1f} s)", err=True),
        scenario_set=scenario_set,
    )
    result = report_to_dict(report)
    _save_run(settings, result)
    typer.echo(json.dumps(result, ensure_ascii=False, indent=2) if as_json else report_to_table(report))


def _relay_eval(
    settings: Settings, folder: Path, wait_s: float, refs: tuple[list[str], str], at: str, as_json: bool
) -> None:
    """The model path through the file relay; the report is kept beside the folder (it names the scenarios)."""
    from bot import wiring
    from bot.eval.relay import run_through_relay

    cases, clock = _eval_cases(refs[0]), _run_clock(at)
    typer.echo(f"eval: {len(cases)} scenarios ({refs[1]}) through the relay in {folder}", err=True)
    report = run_through_relay(
        cases, folder, wait_s, lambda url: wiring.build_relay_diagnoser(settings, url, wait_s, clock), refs[1]
    )
    result = report_to_dict(report)
    _save_run(settings, result)
    folder.with_name(f"{folder.name}.report.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    typer.echo(json.dumps(result, ensure_ascii=False, indent=2) if as_json else report_to_table(report))


def _scenario_refs(names: list[str] | None, folder: Path | None, heldout: bool) -> tuple[list[str], str]:
    """What to run and what to call the set: --scenario names, a team's folder, the held-out set or the suite."""
    if names:
        return names, "selected"
    if folder is not None:
        try:
            return scenario_files(folder), str(folder)
        except ScenarioError as exc:
            raise typer.BadParameter(str(exc), param_hint="--scenarios") from exc
    return (scenario_names(HELDOUT), HELDOUT) if heldout else (scenario_names(), "suite")


def _run_clock(text: str) -> datetime | None:
    """--at: "HH:MM" is its latest occurrence at or before now (UTC); an ISO time must not be in the future."""
    if not text.strip():
        return None
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    try:
        if re.fullmatch(r"\d{1,2}:\d{2}", text.strip()):
            hour, minute = (int(part) for part in text.strip().split(":"))
            at = now.replace(hour=hour, minute=minute)
            return at if at <= now else at - timedelta(days=1)
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise typer.BadParameter(
            f"{text!r} is not a time; use HH:MM (UTC) or ISO 8601 like 2026-11-28T00:05Z", param_hint="--at"
        ) from exc
    at = (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(UTC).replace(second=0, microsecond=0)
    if at > now:
        raise typer.BadParameter(f"{text} is in the future: a sandbox can only hold data up to now", param_hint="--at")
    return at


def _clocks(spec: str, at: str) -> list[datetime]:
    """--clocks: a count spread over the day that ends at --at (or now), or a list of times (then no --at)."""
    if spec.strip().isdigit():
        count = int(spec)
        if not 1 <= count <= 48:
            raise typer.BadParameter("give between 1 and 48 run clocks", param_hint="--clocks")
        return spread_clocks(count, _run_clock(at) or datetime.now(UTC))
    if at.strip():
        raise typer.BadParameter(
            "--at sets the last of N clocks; with a list of times, leave it out", param_hint="--clocks"
        )
    return [clock for part in spec.split(",") if (clock := _run_clock(part)) is not None]


def _eval_at_clocks(
    settings: Settings, cases: list[EvalCase], clocks: list[datetime], mode: str, scenario_set: str, as_json: bool
) -> None:
    """Every case at every clock; each clock's run is stored, the verdict needs a hit at all of them."""
    from bot import wiring

    typer.echo(f"eval: run clocks {', '.join(f'{c:%Y-%m-%d %H:%M}' for c in clocks)} UTC", err=True)
    report = run_clocks(
        cases,
        lambda clock: wiring.build_eval_diagnoser(settings, clock),
        clocks,
        mode=mode,
        model=settings.llm.model if mode == "model" else "",
        scenario_set=scenario_set,
        on_result=lambda at, r: typer.echo(
            f"  {at:%H:%M} {r.scenario}: {'hit' if r.hit else 'MISS'} ({r.wall_s:.1f} s)", err=True
        ),
    )
    result = clocks_to_dict(report)
    for run in result["runs"]:
        _save_run(settings, run)
    typer.echo(json.dumps(result, ensure_ascii=False, indent=2) if as_json else clocks_to_table(report))


def _eval_cases(refs: list[str]) -> list[EvalCase]:
    try:
        return [case_from_scenario(load_scenario(ref), source=ref) for ref in refs]
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


def replay_trace_command(settings: Settings, trace_id: str, expect: list[str], as_json: bool) -> None:
    """`opsbot eval --from-trace ID`: the stored trace's question, its recorded observations, the configured model."""
    from bot import wiring
    from bot.engine.types import Question

    store = wiring.build_store(settings)
    recorded = store.get(trace_id)
    if recorded is None:
        raise typer.BadParameter(f"no stored trace {trace_id!r} (see `opsbot traces list`)", param_hint="--from-trace")
    tools = recorded_toolbox(recorded, wiring.build_tool_specs(settings))
    replayed = wiring.build_responder(settings, tools=tools)(Question(recorded.question, source="eval"), None)
    summary = replay_summary(recorded, replayed)
    if expect:
        result = score_trace(EvalCase(f"trace-{trace_id[:8]}", recorded.question, tuple(expect)), replayed, 0.0)
        summary["score"] = {
            "headline_hit": result.hit,
            "evidence_hit": result.evidence_hit,
            "missing_from_headline": list(result.missing),
        }
    try:
        store.save(replayed)
    except Exception as exc:  # the comparison is still printed
        typer.echo(f"eval: could not store the replayed trace: {exc}", err=True)
    typer.echo(json.dumps(summary, ensure_ascii=False, indent=2) if as_json else _replay_text(summary))


def _replay_text(summary: dict[str, Any]) -> str:
    lines = [
        f"replay of trace {summary['trace_id']}: {summary['question']}",
        f"recorded ({', '.join(summary['recorded']['tools']) or 'no tools'}):",
        summary["recorded"]["answer"],
        "",
        f"replayed as {summary['replayed']['trace_id']} ({', '.join(summary['replayed']['tools']) or 'no tools'}):",
        summary["replayed"]["answer"],
    ]
    if "score" in summary:
        score = summary["score"]
        lines.append(
            f"headline hit: {'yes' if score['headline_hit'] else 'NO'} · evidence hit: "
            f"{'yes' if score['evidence_hit'] else 'NO'}"
            + (
                f" · missing from the headline: {', '.join(score['missing_from_headline'])}"
                if score["missing_from_headline"]
                else ""
            )
        )
    return "\n".join(lines)
