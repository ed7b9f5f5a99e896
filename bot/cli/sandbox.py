"""`opsbot sandbox`: the local incident sandbox (Prometheus, SQLite logs, git deploys) up, down and inspected."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from bot.sandbox.backends import BackendError
from bot.sandbox.scenario import EXAMPLES, HELDOUT, ScenarioError, load_scenario, scenario_names
from bot.sandbox.standins.osmem import local_search_status, read_local_search

if TYPE_CHECKING:
    from bot.sandbox.control import SandboxInfo

app = typer.Typer(no_args_is_help=True, help="Local incident sandbox: Prometheus, SQLite logs, git deploys.")


@app.command("up")
def up_command(
    scenario: Annotated[
        str,
        typer.Option(
            "--scenario",
            metavar="NAME",
            help="a bundled name (heldout/<name>, examples/<name>) or a .toml file (default: OPSBOT_SANDBOX__SCENARIO)",
        ),
    ] = "",
    es: Annotated[
        str,
        typer.Option(
            "--es",
            metavar="URL",
            help="serve logs and deploy events from this Elasticsearch URL instead; 'local' runs the "
            "bundled osmem-server on OPSBOT_SANDBOX__OSMEM_PORT (a dev dependency)",
        ),
    ] = "",
    loki: Annotated[
        bool, typer.Option("--loki", help="serve the logs from the Loki stand-in (logs.backend = loki)")
    ] = False,
) -> None:
    """Build a scenario's data and start Prometheus on loopback (and the Kubernetes API stand-in when the scenario
    has a cluster); reuses a healthy running sandbox."""
    from bot import wiring

    try:
        info = wiring.bring_up_sandbox(wiring.load_settings(), scenario, es, loki)
    except (ScenarioError, BackendError, OSError, RuntimeError, ValueError) as exc:
        typer.echo(f"sandbox up failed: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"sandbox {info.scenario} {'already running' if info.already_running else 'started'}")
    _echo_sandbox(info)
    typer.echo(f"point opsbot at it: set -a; . {info.env_path}; set +a")


@app.command("down")
def down_command() -> None:
    """Stop the sandbox's Prometheus and local osmem-server (by their recorded PIDs) and remove its data."""
    from bot import wiring

    stopped = wiring.take_down_sandbox(wiring.load_settings())
    typer.echo("sandbox stopped" if stopped else "sandbox was not running")


@app.command("status")
def status_command() -> None:
    """Is the sandbox running and healthy, and where does it live? Exit 1 when it is not running."""
    from bot import wiring
    from bot.sandbox.control import sandbox_status  # imports the Elasticsearch client

    sandbox_dir = wiring.load_settings().sandbox.dir
    info, verdict = sandbox_status(sandbox_dir)
    typer.echo(f"sandbox: {verdict}")
    if info is not None:
        _echo_sandbox(info)
    if (search := read_local_search(sandbox_dir)) is not None:
        typer.echo(f"  osmem       {local_search_status(search)}")
    if verdict != "running":
        raise typer.Exit(1)


@app.command("scenarios")
def scenarios_command() -> None:
    """The bundled incident scenarios: the suite, then the held-out set and the examples, with their titles."""
    for name in scenario_names() + scenario_names(HELDOUT) + scenario_names(EXAMPLES):
        typer.echo(f"{name:<34} {load_scenario(name).title}")


def _echo_sandbox(info: SandboxInfo) -> None:
    typer.echo(f"  scenario    {info.scenario} (incident {info.incident_at:%Y-%m-%d %H:%M} UTC)")
    typer.echo(f"  prometheus  {info.prometheus_url} (pid {info.prometheus_pid}, data until {info.data_end:%H:%M} UTC)")
    logs = (
        info.es_url + " (logs-sandbox)"
        if info.es_url
        else f"{info.loki_url} (Loki stand-in, pid {info.loki_pid})"
        if info.loki_url
        else info.logs_db
    )
    typer.echo(f"  logs        {logs}")
    typer.echo(f"  deploys     {info.es_url + ' (deploys)' if info.es_url else info.git_repo}")
    if info.kubeconfig:
        typer.echo(
            f"  kubernetes  namespace {info.kube_namespace}, kubeconfig {info.kubeconfig} "
            f"(API stand-in pid {info.kubeapi_pid})"
        )
    if info.runbooks_dir:
        typer.echo(f"  runbooks    {info.runbooks_dir}")
    typer.echo(f"  env file    {info.env_path}")
