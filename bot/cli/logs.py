"""`opsbot logs ingest FILE`: load a team's JSON-lines logs into the SQLite log store, through the configured field
mapping (the same one the Elasticsearch and Loki backends read with)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Annotated

import typer

SAMPLE_LINES = 200  # read first: a field no line has stops the ingest before anything is stored

app = typer.Typer(
    no_args_is_help=True,
    help="Load JSON-lines logs into the SQLite log store, read through the configured field mapping.",
)


@app.command("ingest")
def ingest_command(
    file: Annotated[Path, typer.Argument(help="a JSON-lines file: one log document per line")],
    service: Annotated[str, typer.Option(help="the service of documents that name none (a file per service)")] = "",
) -> None:
    """Load FILE into the SQLite log store (OPSBOT_LOGS__SQLITE_PATH), reading each document through the
    OPSBOT_LOGS__*_FIELD mapping. A required field (timestamp, service, level, message) that none of the first lines
    has stops it before anything is stored, naming the setting and the keys the documents do have."""
    from bot import wiring
    from tools.logs.documents import sample_report

    store = wiring.build_log_store(wiring.load_settings())
    if not file.is_file():
        typer.echo(f"opsbot logs ingest: {file} is not a file", err=True)
        raise typer.Exit(2)
    with file.open(encoding="utf-8") as handle:
        preview = sample_report(itertools.islice(handle, SAMPLE_LINES), store.fields, service)
    if absent := preview.absent():
        for line in absent:
            typer.echo(f"opsbot logs ingest: {line}", err=True)
        typer.echo("nothing stored: set the field names (OPSBOT_LOGS__*_FIELD or [logs] in the config file)", err=True)
        raise typer.Exit(2)
    report = store.ingest(file, default_service=service)
    skipped = f" ({report.skipped:,} skipped: not a JSON object or no timestamp)" if report.skipped else ""
    typer.echo(f"stored {report.stored:,} of {report.read:,} lines from {file} in {store.path}{skipped}")
    typer.echo("services: " + ", ".join(f"{name or '(none)'} {n:,}" for name, n in report.services.most_common()))
    typer.echo("levels as written: " + ", ".join(f"{raw} {n:,}" for raw, n in report.levels.most_common()))
    for line in report.problems():
        typer.echo(f"warning: {line}", err=True)
