"""`opsbot` command line. Thin: every command asks bot.wiring for ready objects and prints results."""

from __future__ import annotations

import json
import logging
import signal
import sys
from datetime import datetime
from typing import Annotated, Any

import typer
from pydantic import SecretStr

from bot import wiring
from bot.cli.terminal import step_printer, step_to_text, trace_summary
from bot.config import Settings
from bot.engine.text.parser import parse_reply, parsed_to_dict
from bot.engine.types import Question, Trace, trace_to_dict
from bot.eval import case_from_scenario, report_to_dict, report_to_table, run_eval, runs_to_table
from bot.routing.intent import intent_to_dict
from bot.sandbox.backends import BackendError
from bot.sandbox.control import SandboxInfo, sandbox_status
from bot.sandbox.osmem import local_search_status, read_local_search
from bot.sandbox.scenario import ScenarioError, load_scenario, scenario_names
from bot.store.analytics import since_from_text, stats_to_text

log = logging.getLogger(__name__)

app = typer.Typer(no_args_is_help=True, add_completion=False, help="opsbot: incident diagnosis from chat.")


@app.callback()
def _setup(verbose: bool = typer.Option(False, "--verbose", "-v", help="DEBUG logging")) -> None:
    level = logging.DEBUG if verbose else getattr(logging, wiring.load_settings().log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    wiring.install_log_redaction()  # no secret from a backend's error text reaches the logs


@app.command("parse")
def parse_command(
    jsonl: bool = typer.Option(False, "--jsonl", help="each stdin line is a JSON string; one result line each"),
    tool: Annotated[list[str] | None, typer.Option(help="a known tool name (repeatable), to normalise names")] = None,
) -> None:
    """Show how opsbot reads a raw model output from stdin: the action, the final answer, or the format error."""
    tools = tool or []
    if not jsonl:
        typer.echo(json.dumps(parsed_to_dict(parse_reply(sys.stdin.read(), tools)), ensure_ascii=False))
        return
    for number, line in enumerate(sys.stdin, start=1):
        if line.strip():
            typer.echo(json.dumps(_parse_jsonl_line(line, number, tools), ensure_ascii=False))


def _parse_jsonl_line(line: str, number: int, tools: list[str]) -> dict[str, Any]:
    """A bad input line still gives one output line, so results stay aligned with the input."""
    try:
        reply = json.loads(line)
    except json.JSONDecodeError:
        reply = None
    if not isinstance(reply, str):
        return {"kind": "error", "message": f"input line {number} is not a JSON string"}
    return parsed_to_dict(parse_reply(reply, tools))


traces_app = typer.Typer(no_args_is_help=True, help="Read stored diagnoses: list, show, search, stats.")
app.add_typer(traces_app, name="traces")


@traces_app.command("list")
def traces_list(
    min_steps: int = typer.Option(0, "--min-steps", help="only runs with at least this many steps"),
    since: str = typer.Option("", "--since", help="30m, 12h, 7d, 2w or an ISO date"),
    limit: int = typer.Option(20, "--limit"),
) -> None:
    """Newest stored runs first: id, start, stop reason, steps, tokens, seconds, question."""
    store = wiring.build_store(wiring.load_settings())
    for trace in store.list(limit, min_steps=min_steps, since=_since(since)):
        t = trace.totals
        typer.echo(
            f"{trace.trace_id}  {trace.started_at[:19]}  {trace.stop_reason.value:<15} {len(trace.steps):>2} steps "
            f"{t.tokens:>7,} tok {t.elapsed_ms / 1000:>6.1f} s  {trace.question[:70]!r}"
        )


@traces_app.command("show")
def traces_show(trace_id: str, as_json: bool = typer.Option(False, "--json", help="the stored trace as JSON")) -> None:
    """One stored run: every step, then the answer with its status line."""
    trace = wiring.build_store(wiring.load_settings()).get(trace_id)
    if trace is None:
        typer.echo(f"no trace {trace_id!r}", err=True)
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps(trace_to_dict(trace), ensure_ascii=False, indent=2))
        return
    for step in trace.steps:  # every line: Slack's trimmed answer points here for the whole trace
        typer.echo(step_to_text(step, observation_lines=len(step.observation.splitlines())))
    typer.echo(trace_summary(trace))


@traces_app.command("search")
def traces_search(text: str, limit: int = typer.Option(20, "--limit")) -> None:
    """Full-text search over questions, answers and observations, best match first."""
    for trace in wiring.build_store(wiring.load_settings()).search(text, limit):
        typer.echo(f"{trace.trace_id}  {trace.started_at[:19]}  {trace.question[:60]!r} -> {trace.answer[:60]!r}")


@traces_app.command("stats")
def traces_stats(
    since: str = typer.Option("7d", "--since", help="30m, 12h, 7d, 2w, an ISO date, or '' for all"),
    long_run_steps: int = typer.Option(6, "--long-run-steps", help="count runs with more steps than this"),
) -> None:
    """Operator questions: long runs, tool error rates, stop reasons, tokens per day, feedback, p50/p95."""
    stats = wiring.build_store(wiring.load_settings()).stats(since=_since(since), long_run_steps=long_run_steps)
    typer.echo(stats_to_text(stats))


def _since(text: str) -> datetime | None:
    try:
        return since_from_text(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since") from exc


sandbox_app = typer.Typer(no_args_is_help=True, help="Local incident sandbox: Prometheus, SQLite logs, git deploys.")
app.add_typer(sandbox_app, name="sandbox")


@sandbox_app.command("up")
def sandbox_up_command(
    scenario: str = typer.Option("", "--scenario", help="scenario name (default: OPSBOT_SANDBOX__SCENARIO)"),
    es: str = typer.Option(
        "", "--es", help="serve logs and deploy events from this Elasticsearch URL instead; 'local' runs the "
        "bundled osmem-server on OPSBOT_SANDBOX__OSMEM_PORT (a dev dependency)",
    ),
) -> None:
    """Build a scenario's data and start Prometheus on loopback; reuses a healthy running sandbox."""
    try:
        info = wiring.bring_up_sandbox(wiring.load_settings(), scenario, es)
    except (ScenarioError, BackendError, OSError, RuntimeError, ValueError) as exc:
        typer.echo(f"sandbox up failed: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"sandbox {info.scenario} {'already running' if info.already_running else 'started'}")
    _echo_sandbox(info)
    typer.echo(f"point opsbot at it: set -a; . {info.env_path}; set +a")


@sandbox_app.command("down")
def sandbox_down_command() -> None:
    """Stop the sandbox's Prometheus and local osmem-server (by their recorded PIDs) and remove its data."""
    stopped = wiring.take_down_sandbox(wiring.load_settings())
    typer.echo("sandbox stopped" if stopped else "sandbox was not running")


@sandbox_app.command("status")
def sandbox_status_command() -> None:
    """Is the sandbox running and healthy, and where does it live? Exit 1 when it is not running."""
    sandbox_dir = wiring.load_settings().sandbox.dir
    info, verdict = sandbox_status(sandbox_dir)
    typer.echo(f"sandbox: {verdict}")
    if info is not None:
        _echo_sandbox(info)
    if (search := read_local_search(sandbox_dir)) is not None:
        typer.echo(f"  osmem       {local_search_status(search)}")
    if verdict != "running":
        raise typer.Exit(1)


@sandbox_app.command("scenarios")
def sandbox_scenarios_command() -> None:
    """The bundled incident scenarios: name and title."""
    for name in scenario_names():
        typer.echo(f"{name:<22} {load_scenario(name).title}")


def _echo_sandbox(info: SandboxInfo) -> None:
    typer.echo(f"  scenario    {info.scenario} (incident {info.incident_at:%Y-%m-%d %H:%M} UTC)")
    typer.echo(f"  prometheus  {info.prometheus_url} (pid {info.prometheus_pid}, data until {info.data_end:%H:%M} UTC)")
    typer.echo(f"  logs        {info.es_url + ' (logs-sandbox)' if info.es_url else info.logs_db}")
    typer.echo(f"  deploys     {info.es_url + ' (deploys)' if info.es_url else info.git_repo}")
    typer.echo(f"  env file    {info.env_path}")


@app.command("diagnose")
def diagnose_command(
    question: Annotated[str, typer.Argument(help='what you would ask in Slack, e.g. "why is order slow since 15:05?"')],
    as_json: bool = typer.Option(False, "--json", help="print the whole Trace as JSON instead of the readable form"),
) -> None:
    """Answer one question as Slack would: each step as it completes, then the answer (stored, see `traces`)."""
    settings = wiring.load_settings()
    typer.echo(_mode_line(settings), err=True)
    on_step = None if as_json else step_printer(sys.stdout)
    try:  # the CLI is a surface: it catches once and always answers
        trace = wiring.build_responder(settings)(Question(question, source="cli"), on_step)
    except Exception as exc:
        log.exception("diagnose failed")
        typer.echo(f"opsbot could not run the diagnosis: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from exc
    try:  # stored before it is shown, as on every surface; a store problem must not cost the answer
        wiring.build_store(settings).save(trace)
    except Exception as exc:
        log.warning("trace %s not stored: %s", trace.trace_id, exc)
    typer.echo(json.dumps(trace_to_dict(trace), ensure_ascii=False, indent=2) if as_json else trace_summary(trace))


@app.command("demo")
def demo_command(
    scenario: str = typer.Option("", "--scenario", help="a sandbox scenario (default: settings.sandbox.scenario)"),
) -> None:
    """Bring the incident sandbox up if needed and diagnose its incident live, step by step."""
    settings = wiring.load_settings()
    if logging.getLogger().level > logging.DEBUG:  # the printed steps are the demo; keep INFO lines out of them
        logging.getLogger().setLevel(logging.WARNING)
    try:  # the CLI is a surface: it catches once and always answers
        info = wiring.bring_up_sandbox(settings, scenario)
        settings = wiring.sandbox_overrides(settings, info)
        question = load_scenario(info.scenario).question
        typer.echo(f"sandbox {info.scenario}: {'already running' if info.already_running else 'started'}, "
                   f"Prometheus {info.prometheus_url}")
        typer.echo(_mode_line(settings))
        typer.echo(f"\nQuestion: {question}\n")
        trace = wiring.build_responder(settings)(Question(question, source="cli"), step_printer(sys.stdout))
    except (BackendError, ScenarioError, OSError) as exc:
        typer.echo(f"demo: the sandbox could not start: {exc}", err=True)
        raise typer.Exit(1) from exc
    except Exception as exc:
        log.exception("demo failed")
        typer.echo(f"demo failed: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from exc
    saved = _store_trace(settings, trace)  # stored before the answer is shown, as every surface does
    typer.echo(trace_summary(trace))
    typer.echo('\nThe sandbox keeps running (ask more with opsbot diagnose "..."); opsbot sandbox down stops it.')
    if saved:
        typer.echo(f"Saved: opsbot traces show {trace.trace_id}")


def _store_trace(settings: Settings, trace: Trace) -> bool:
    try:
        wiring.build_store(settings).save(trace)
        return True
    except Exception as exc:  # the diagnosis still reaches the screen; only its history entry is lost
        typer.echo(f"demo: could not store the trace {trace.trace_id}: {exc}", err=True)
        return False


def _mode_line(settings: Settings) -> str:
    if settings.llm.configured:
        return f"LLM: {settings.llm.model} at {settings.llm.base_url or 'api.openai.com'}"
    return ("No LLM configured (set OPENAI_API_KEY or OPSBOT_LLM__BASE_URL to use one): the deterministic "
            "playbook diagnoses, without a model.")


@app.command("eval")
def eval_command(
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="run only these (repeatable)")] = None,
    model: str = typer.Option("", "--model", help="the model to measure (default: OPSBOT_LLM__MODEL)"),
    playbook: bool = typer.Option(False, "--playbook", help="measure the playbook even if an LLM is configured"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON instead of a table"),
    history: int = typer.Option(0, "--history", help="print the last N stored runs instead of running"),
) -> None:
    """Diagnose every sandbox scenario through the full path and score it; the run is kept in the trace store."""
    settings = _eval_settings(wiring.load_settings(), model, playbook)
    if history:
        typer.echo(runs_to_table(wiring.build_store(settings).eval_runs(history)))
        return
    names = scenario or scenario_names()
    try:
        cases = [case_from_scenario(load_scenario(name)) for name in names]
    except ScenarioError as exc:
        raise typer.BadParameter(str(exc), param_hint="--scenario") from exc
    mode = "model" if settings.llm.configured else "playbook"
    if model and mode == "playbook":
        typer.echo(f"eval: --model {model} given, but no LLM is configured (or --playbook): measuring the playbook.",
                   err=True)
    typer.echo(f"eval: {len(cases)} scenarios, {mode}. {_mode_line(settings)}", err=True)
    report = run_eval(
        cases, wiring.build_eval_diagnoser(settings), mode=mode, model=settings.llm.model if mode == "model" else "",
        on_result=lambda r: typer.echo(f"  {r.scenario}: {'hit' if r.hit else 'MISS'} ({r.wall_s:.1f} s)", err=True),
    )
    result = report_to_dict(report)
    try:
        wiring.build_store(settings).save_eval_run(result)
    except Exception as exc:  # the report is still printed; only its history entry is lost
        typer.echo(f"eval: could not store the run: {exc}", err=True)
    typer.echo(json.dumps(result, ensure_ascii=False, indent=2) if as_json else report_to_table(report))


def _eval_settings(settings: Settings, model: str, playbook: bool) -> Settings:
    llm = settings.llm
    if playbook:
        llm = llm.model_copy(update={"base_url": "", "api_key": SecretStr("")})
    if model:
        llm = llm.model_copy(update={"model": model})
    return settings.model_copy(update={"llm": llm})


@app.command("classify")
def classify_command(
    text: Annotated[str, typer.Argument(help="the message to route; omit with --jsonl")] = "",
    jsonl: bool = typer.Option(False, "--jsonl", help="classify each stdin line; one JSON line out per line in"),
) -> None:
    """Show how the intent gate routes a message: route, confidence, tier (rules/model/default) and reason."""
    classifier = wiring.build_classifier(wiring.load_settings())
    lines = [line.rstrip("\n") for line in sys.stdin if line.strip()] if jsonl else [text]
    for line in lines:
        typer.echo(json.dumps(intent_to_dict(classifier(line)), ensure_ascii=False))


@app.command("serve")
def serve_command() -> None:
    """Serve Slack (Socket Mode when OPSBOT_SLACK__APP_TOKEN is set, else HTTP at /slack/events), the API, /healthz."""
    # SIGTERM (docker stop, Kubernetes) unwinds like Ctrl-C, so running diagnoses get to post their answers.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    try:
        wiring.serve_forever(wiring.load_settings())
    except ValueError as exc:
        typer.echo(f"opsbot serve: {exc}", err=True)
        raise typer.Exit(2) from exc
    except KeyboardInterrupt:
        typer.echo("stopped")


def main() -> None:
    app()
