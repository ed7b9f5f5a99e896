"""`opsbot` command line. Thin: every command asks bot.wiring for ready objects and prints results."""

from __future__ import annotations

import logging

import typer

from bot import wiring

app = typer.Typer(no_args_is_help=True, add_completion=False, help="opsbot: incident diagnosis from chat.")


@app.callback()
def _setup(verbose: bool = typer.Option(False, "--verbose", "-v", help="DEBUG logging")) -> None:
    level = logging.DEBUG if verbose else getattr(logging, wiring.load_settings().log_level.upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s")


def main() -> None:
    app()
