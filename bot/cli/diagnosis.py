"""`opsbot diagnose` and `opsbot demo`: one question answered as Slack would, step by step, then stored."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.terminal import mode_line, step_printer, trace_summary
from bot.engine.types import Question, Trace, trace_to_dict
from bot.safety.inbound import clean_inbound
from bot.safety.outbound import plain_text, plain_value
from bot.sandbox.scenario import ScenarioError, load_scenario

if TYPE_CHECKING:  # pydantic-settings loads when a command reads settings, not for --help
    from bot.config import Settings

log = logging.getLogger(__name__)


def diagnose_command(
    question: Annotated[str, typer.Argument(help='what you would ask in Slack, e.g. "why is order slow since 15:05?"')],
    as_json: Annotated[
        bool, typer.Option("--json", help="print the whole Trace as JSON instead of the readable form")
    ] = False,
    chart: Annotated[
        Path | None,
        typer.Option("--chart", metavar="FILE", help="write the chart of the symptom to FILE (PNG), as Slack gets it"),
    ] = None,
) -> None:
    """Answer one question as Slack would: each step as it completes, then the answer (stored, see `traces`)."""
    from bot import wiring

    settings = wiring.load_settings()
    typer.echo(mode_line(settings), err=True)
    on_step = None if as_json else step_printer(sys.stdout)
    try:  # the CLI is a surface: it catches once and always answers
        trace = wiring.build_responder(settings)(Question(clean_inbound(question), source="cli"), on_step)
    except Exception as exc:
        log.exception("diagnose failed")
        typer.echo(f"opsbot could not run the diagnosis: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from exc
    try:  # stored before it is shown, as on every surface; a store problem must not cost the answer
        wiring.build_store(settings).save(trace)
    except Exception as exc:
        log.warning("trace %s not stored: %s", trace.trace_id, exc)
    # through the outbound pass: no secret the model wrote, no control character (ESC sequences could rewrite it)
    typer.echo(
        json.dumps(plain_value(trace_to_dict(trace)), ensure_ascii=False, indent=2, allow_nan=False)
        if as_json
        else plain_text(trace_summary(trace))
    )
    if chart is not None:
        _write_chart(settings, trace, chart)


def _write_chart(settings: Settings, trace: Trace, path: Path) -> None:
    """The chart Slack would get, written to `path`; no series to draw, or a file that cannot be written, is said."""
    from bot import wiring
    from bot.chart.draw import trace_png

    png = trace_png(trace, wiring.build_zone(settings))
    if png is None:
        typer.echo("chart: no step of this diagnosis holds a series to draw; nothing written", err=True)
        raise typer.Exit(1)
    try:
        path.write_bytes(png)
    except OSError as exc:
        typer.echo(f"chart: could not write {path}: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"chart: {path} ({len(png):,} bytes)", err=True)


def demo_command(
    scenario: Annotated[
        str, typer.Option("--scenario", metavar="NAME", help="a sandbox scenario (default: settings.sandbox.scenario)")
    ] = "",
    chart: Annotated[
        Path | None,
        typer.Option("--chart", metavar="FILE", help="write the chart of the symptom to FILE (PNG), as Slack gets it"),
    ] = None,
) -> None:
    """Bring the incident sandbox up if needed and diagnose its incident live, step by step."""
    from bot import wiring
    from bot.sandbox.backends import BackendError  # requests loads for the demo only

    settings = wiring.load_settings()
    if logging.getLogger().level > logging.DEBUG:  # the printed steps are the demo; keep INFO lines out of them
        logging.getLogger().setLevel(logging.WARNING)
    try:  # the CLI is a surface: it catches once and always answers
        settings, trace = _run_demo(settings, scenario)
    except (BackendError, ScenarioError, OSError) as exc:
        typer.echo(f"demo: the sandbox could not start: {exc}", err=True)
        raise typer.Exit(1) from exc
    except Exception as exc:
        log.exception("demo failed")
        typer.echo(f"demo failed: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from exc
    saved = _store_trace(settings, trace)  # stored before the answer is shown, as every surface does
    typer.echo(plain_text(trace_summary(trace)))
    typer.echo('\nThe sandbox keeps running (ask more with opsbot diagnose "..."); opsbot sandbox down stops it.')
    if saved:
        typer.echo(f"Saved: opsbot traces show {trace.trace_id}")
    if chart is not None:
        _write_chart(settings, trace, chart)


def _run_demo(settings: Settings, scenario: str) -> tuple[Settings, Trace]:
    """The sandbox up, settings pointed at it, and its scenario's question diagnosed with every step printed."""
    from bot import wiring

    info = wiring.bring_up_sandbox(settings, scenario)
    settings = wiring.sandbox_overrides(settings, info)
    question = load_scenario(info.scenario).question
    typer.echo(
        f"sandbox {info.scenario}: {'already running' if info.already_running else 'started'}, "
        f"Prometheus {info.prometheus_url}"
    )
    typer.echo(mode_line(settings))
    typer.echo(f"\nQuestion: {question}\n")
    return settings, wiring.build_responder(settings)(Question(question, source="cli"), step_printer(sys.stdout))


def _store_trace(settings: Settings, trace: Trace) -> bool:
    from bot import wiring

    try:
        wiring.build_store(settings).save(trace)
        return True
    except Exception as exc:  # the diagnosis still reaches the screen; only its history entry is lost
        typer.echo(f"demo: could not store the trace {trace.trace_id}: {exc}", err=True)
        return False
