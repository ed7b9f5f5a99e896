"""`opsbot traces`: read stored diagnoses (list, show, search, stats) from the configured trace store."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated

import typer

from bot.cli.terminal import step_to_text, trace_summary
from bot.engine.types import Trace, trace_to_dict
from bot.store.analytics import since_from_text, stats_to_text
from bot.store.base import TraceStore, answer_or_state, is_partial, state_of

app = typer.Typer(no_args_is_help=True, help="Read stored diagnoses: list, show, search, stats.")


@app.command("list")
def list_command(
    min_steps: Annotated[
        int, typer.Option("--min-steps", metavar="N", help="only runs with at least this many steps")
    ] = 0,
    since: Annotated[str, typer.Option("--since", metavar="WHEN", help="30m, 12h, 7d, 2w or an ISO date")] = "",
    limit: Annotated[int, typer.Option("--limit", metavar="N")] = 20,
) -> None:
    """Newest stored runs first: id, start, state (the stop reason; running, queued or partial for a run with
    no final answer), steps, tokens, seconds, question."""
    traces = _store().list(limit, min_steps=min_steps, since=_since(since))
    states = _states(traces)
    for trace in traces:
        t = trace.totals
        typer.echo(
            f"{trace.trace_id}  {trace.started_at[:19]}  {states[trace.trace_id]:<15} {len(trace.steps):>2} steps "
            f"{t.tokens:>7,} tok {t.elapsed_ms / 1000:>6.1f} s  {trace.question[:70]!r}"
        )


@app.command("show")
def show_command(
    trace_id: str, as_json: Annotated[bool, typer.Option("--json", help="the stored trace as JSON")] = False
) -> None:
    """One stored run: every step, then the answer with its status line."""
    trace = _store().get(trace_id)
    if trace is None:
        typer.echo(f"no trace {trace_id!r}", err=True)
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps(trace_to_dict(trace), ensure_ascii=False, indent=2))
        return
    for step in trace.steps:  # every line: Slack's trimmed answer points here for the whole trace
        typer.echo(step_to_text(step, observation_lines=len(step.observation.splitlines())))
    typer.echo(trace_summary(trace))


@app.command("search")
def search_command(text: str, limit: Annotated[int, typer.Option("--limit", metavar="N")] = 20) -> None:
    """Full-text search over questions, answers and observations, best match first (a run with no final answer
    says so instead of an empty answer)."""
    traces = _store().search(text, limit)
    states = _states(traces)
    for trace in traces:
        answer = answer_or_state(trace, states[trace.trace_id])
        shown = repr(answer[:60]) if answer == trace.answer else answer
        typer.echo(f"{trace.trace_id}  {trace.started_at[:19]}  {trace.question[:60]!r} -> {shown}")


@app.command("stats")
def stats_command(
    since: Annotated[
        str, typer.Option("--since", metavar="WHEN", help="30m, 12h, 7d, 2w, an ISO date, or '' for all")
    ] = "7d",
    long_run_steps: Annotated[
        int, typer.Option("--long-run-steps", metavar="N", help="count runs with more steps than this")
    ] = 6,
) -> None:
    """Operator questions: long runs, tool error rates, stop reasons, tokens per day, feedback, p50/p95."""
    stats = _store().stats(since=_since(since), long_run_steps=long_run_steps)
    typer.echo(stats_to_text(stats))


def _states(traces: list[Trace]) -> dict[str, str]:
    """state_of() each trace; a partial one's job status is asked of Redis when it is configured."""
    partial = [t.trace_id for t in traces if is_partial(t)]
    statuses: dict[str, str] = {}
    if partial:
        from bot import wiring

        try:
            statuses = wiring.job_statuses(wiring.load_settings(), partial)
        except Exception as exc:  # honest: "partial" means not checked here, never "interrupted"
            typer.echo(f"job status not checked (Redis: {type(exc).__name__}); partial runs show as partial", err=True)
    return {t.trace_id: state_of(t, statuses.get(t.trace_id, "")) for t in traces}


def _store() -> TraceStore:
    from bot import wiring

    return wiring.build_store(wiring.load_settings())


def _since(text: str) -> datetime | None:
    try:
        return since_from_text(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since") from exc
