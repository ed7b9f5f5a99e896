"""`opsbot serve` (the long-running service, until SIGTERM or Ctrl-C) and `opsbot doctor` (its startup checks)."""

from __future__ import annotations

import signal
import sys
from typing import Any

import typer


def serve_command() -> None:
    """Serve Slack (Socket Mode when OPSBOT_SLACK__APP_TOKEN is set, else HTTP at /slack/events), the API, /livez."""
    from bot import wiring

    settings = wiring.load_settings()
    if not _report(wiring.run_checks(settings), quiet_ok=True):
        typer.echo("opsbot serve: not starting; fix the FAIL lines above (`opsbot doctor` checks again)", err=True)
        raise typer.Exit(2)
    # SIGTERM (docker stop, Kubernetes) unwinds like Ctrl-C: opsbot stops taking work and drains within
    # OPSBOT_SERVER__SHUTDOWN_DRAIN_S before it exits.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    try:
        wiring.serve_forever(settings)
    except ValueError as exc:
        typer.echo(f"opsbot serve: {exc}", err=True)
        raise typer.Exit(2) from exc
    except KeyboardInterrupt:
        typer.echo("stopped")


def doctor_command() -> None:
    """Check the settings, probe each backend, and prove the settings against live data: every catalogue query of
    every service returns data; a problem names the setting, where it was set, and what it may have meant."""
    from bot import wiring
    from bot.wiring.meaning import meaning_checks

    checks = [*wiring.default_checks(), *meaning_checks()]
    if not _report(wiring.run_checks(wiring.load_settings(), checks), quiet_ok=False):
        raise typer.Exit(1)


def _report(results: list[Any], *, quiet_ok: bool) -> bool:
    """Print one line per check (serve skips the ok ones); True when nothing failed."""
    for result in results:
        if not (quiet_ok and result.level == "ok"):
            typer.echo(str(result), err=result.level != "ok")
    return not any(r.level == "fail" for r in results)
