"""`opsbot` command line. Thin: every command asks bot.wiring for ready objects and prints results.

One module per concern: diagnosis (diagnose, demo), inspection (parse, classify), evaluation (eval), service
(serve), and the `intent`, `traces`, `logs` and `sandbox` groups; terminal renders steps and traces as plain text. The
command table (commands.py) imports a command's module only when that command runs; the commands import bot.wiring
then, and bot.wiring imports a builder's module (and its clients: openai, elasticsearch, slack_bolt...) on first
use, so `--help`, `parse` and `classify` without a model stay quick (tests/cli/test_startup_imports.py guards it).
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from bot.cli.commands import CONTEXT_SETTINGS, HELP_ONLY, LazyGroup
from bot.cli.plainenv import gate_is_default, log_level_name

# Commands that read no setting (`classify` when nothing about the model or the gate is set): their log level comes
# from OPSBOT_LOG_LEVEL (environment or ./.env) without loading Settings (pydantic-settings is ~0.3 s of imports).
NEEDS_NO_SETTINGS = frozenset({"parse"})
NEEDS_NO_SETTINGS_BY_DEFAULT = frozenset({"classify"})

# Plain click-style help: typer's Rich panels (rich_markup_mode="rich", the default when Rich is installed) tag
# every row with its type, `--help <bool>` included. Up to 120 columns wide, so wide terminals show whole summaries.
# The commands live in bot/cli/commands.py's table and are imported when they run.
app = typer.Typer(
    cls=LazyGroup,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings=CONTEXT_SETTINGS,
    help="opsbot: incident diagnosis from chat.",
)


@app.callback()
def _setup(
    ctx: typer.Context, verbose: Annotated[bool, typer.Option("--verbose", "-v", help="DEBUG logging")] = False
) -> None:
    if ctx.meta.get(HELP_ONLY):  # `opsbot diagnose --help`: the command only prints its help, nothing to set up
        return
    plain = ctx.invoked_subcommand in NEEDS_NO_SETTINGS or (
        ctx.invoked_subcommand in NEEDS_NO_SETTINGS_BY_DEFAULT and gate_is_default()
    )
    name = log_level_name() if plain else _settings_log_level()
    level = logging.DEBUG if verbose else getattr(logging, name.upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if ctx.invoked_subcommand not in NEEDS_NO_SETTINGS:
        from bot import wiring

        wiring.install_log_redaction()  # no secret from a backend's error text reaches the logs


def _settings_log_level() -> str:
    from bot import wiring

    try:
        return wiring.load_settings().log_level
    except (ValueError, OSError) as exc:  # pydantic's errors, a missing config file: one line each, no traceback
        from bot.wiring.doctor import settings_problems  # imports the backend probes' clients (requests)

        for line in settings_problems(exc):
            typer.echo(f"opsbot: bad setting {line}", err=True)
        raise typer.Exit(2) from exc


def main() -> None:
    app()
