"""`opsbot` command line. Thin: every command asks bot.wiring for ready objects and prints results.

One module per concern: diagnosis (diagnose, demo), inspection (parse, classify), evaluation (eval), service
(serve), and the `intent`, `traces` and `sandbox` groups; terminal renders steps and traces as plain text. The commands
import bot.wiring when they run, and bot.wiring imports a builder's module (and its clients: openai, elasticsearch,
slack_bolt...) on first use, so `--help`, `parse` and `classify` without a model stay quick
(tests/cli/test_startup_imports.py guards it).
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from bot.cli import diagnosis, evaluation, inspection, intent, sandbox, service, toolsets, traces

# Plain click-style help: typer's Rich panels (rich_markup_mode="rich", the default when Rich is installed) tag
# every row with its type, `--help <bool>` included. Up to 120 columns wide, so wide terminals show whole summaries.
app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": 120},
    help="opsbot: incident diagnosis from chat.",
)


@app.callback()
def _setup(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="DEBUG logging")] = False) -> None:
    from bot import wiring
    from bot.wiring.doctor import settings_problems

    try:
        settings = wiring.load_settings()
    except (ValueError, OSError) as exc:  # pydantic's errors, a missing config file: one line each, no traceback
        for line in settings_problems(exc):
            typer.echo(f"opsbot: bad setting {line}", err=True)
        raise typer.Exit(2) from exc
    level = logging.DEBUG if verbose else getattr(logging, settings.log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    wiring.install_log_redaction()  # no secret from a backend's error text reaches the logs


# The command table, in the order `opsbot --help` lists it.
app.command("parse")(inspection.parse_command)
app.command("diagnose")(diagnosis.diagnose_command)
app.command("demo")(diagnosis.demo_command)
app.command("eval")(evaluation.eval_command)
app.command("classify")(inspection.classify_command)
app.command("serve")(service.serve_command)
app.command("doctor")(service.doctor_command)
app.command("toolsets")(toolsets.toolsets_command)
app.command("mcp")(toolsets.mcp_command)
app.add_typer(intent.app, name="intent")
app.add_typer(traces.app, name="traces")
app.add_typer(sandbox.app, name="sandbox")


def main() -> None:
    app()
