"""`opsbot serve`: the long-running service, Slack plus the HTTP API, until SIGTERM or Ctrl-C."""

from __future__ import annotations

import signal
import sys

import typer


def serve_command() -> None:
    """Serve Slack (Socket Mode when OPSBOT_SLACK__APP_TOKEN is set, else HTTP at /slack/events), the API, /healthz."""
    from bot import wiring

    # SIGTERM (docker stop, Kubernetes) unwinds like Ctrl-C, so running diagnoses get to post their answers.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    try:
        wiring.serve_forever(wiring.load_settings())
    except ValueError as exc:
        typer.echo(f"opsbot serve: {exc}", err=True)
        raise typer.Exit(2) from exc
    except KeyboardInterrupt:
        typer.echo("stopped")
