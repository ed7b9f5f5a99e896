"""`opsbot init` (inspect a stack and write the config file) and `opsbot config` (the effective settings)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from bot.cli.tomlfile import config_toml


def init_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="the config file to write (TOML)")],
    prometheus: Annotated[str, typer.Option("--prometheus", metavar="URL", help="the Prometheus to inspect")],
    elasticsearch: Annotated[
        str, typer.Option("--elasticsearch", metavar="URL", help="logs in Elasticsearch/OpenSearch")
    ] = "",
    loki: Annotated[str, typer.Option("--loki", metavar="URL", help="logs in Loki")] = "",
    deploys_git: Annotated[
        str, typer.Option("--deploys-git", metavar="PATH", help="the repository deploys are committed to")
    ] = "",
    deploys_index: Annotated[
        str, typer.Option("--deploys-index", metavar="NAME", help="an Elasticsearch index of deploy events")
    ] = "",
    force: Annotated[bool, typer.Option("--force", help="overwrite the output file")] = False,
) -> None:
    """Inspect a stack (Prometheus, logs, deploys) and write a commented config file with the evidence for each
    choice; load it with OPSBOT_CONFIG_FILE, then check it with `opsbot doctor`."""
    from bot import wiring

    if elasticsearch and loki:
        raise typer.BadParameter("give --elasticsearch or --loki, not both")
    if output.exists() and not force:
        typer.echo(f"opsbot init: {output} exists; pass --force to overwrite it", err=True)
        raise typer.Exit(2)
    repo = Path(deploys_git) if deploys_git else None
    options = wiring.StackOptions(prometheus, elasticsearch, loki, repo, deploys_index)
    findings = wiring.discover_stack(wiring.load_settings(), options)
    for finding in findings:
        typer.echo(_finding_lines(finding))
    if any(f.setting == "prometheus.url" and f.value is None for f in findings):
        typer.echo(f"opsbot init: Prometheus could not be inspected; {output} was not written", err=True)
        raise typer.Exit(1)
    unread = wiring.not_inspected(findings)
    header = [
        *(f"NOT INSPECTED: {line}" for line in unread),
        f"Written by `opsbot init` at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Each setting says what it is based on.",
        f"Load it with OPSBOT_CONFIG_FILE={output}; `opsbot doctor` checks every setting against live data.",
    ]
    output.write_text(config_toml(findings, header), encoding="utf-8")
    written, missing = sum(f.value is not None for f in findings), sum(bool(f.problems) for f in findings)
    seen = sum(len(f.warnings) for f in findings if f.value is None)
    typer.echo(f"\nWrote {output}: {written} settings; {missing} not found or not recognised (✗ above).")
    if seen:
        typer.echo(f"{seen} series seen and not used (? above): each says how to add it to the catalogue.")
    if unread:  # a part left out is not a config to trust: the same non-zero exit as a Prometheus init cannot read
        typer.echo(
            f"opsbot init: {len(unread)} part(s) could not be inspected (✗ above, and at the top of {output})", err=True
        )
        raise typer.Exit(1)
    typer.echo(f"Next: OPSBOT_CONFIG_FILE={output} opsbot doctor")


def _finding_lines(finding: Any) -> str:
    if finding.value is None and finding.warnings and not finding.problems:  # seen, not used
        return "\n".join([f"? {finding.setting}: {finding.evidence}", *(f"    - {w}" for w in finding.warnings)])
    if finding.value is None:
        return "\n".join(f"✗ {finding.setting}: {problem}" for problem in finding.problems)
    value = finding.value
    if isinstance(value, dict) and "promql" in value:
        shown = f"({value.get('role') or 'no role'}, {value['unit']}) {value['promql']}"
    else:
        shown = f"= {value!r}" if value == "" else f"= {value}"  # an empty value is a choice too
    lines = [f"✓ {finding.setting} {shown}"]
    lines += [f"    {finding.evidence}"] if finding.evidence else []
    lines += [f"  ! {problem}" for problem in (*finding.problems, *finding.warnings)]
    return "\n".join(lines)


def config_command(
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per setting")] = False,
) -> None:
    """Print the effective settings and where each one came from (environment, .env, config file, default);
    secrets masked."""
    import json

    from bot import wiring
    from bot.config.provenance import dotenv_entries, effective_settings, environment, origin_of, origins

    settings = wiring.load_settings()
    claims = origins(environment(), dotenv_entries(), settings.config_file)
    for path, value in effective_settings(settings):
        name, origin = ".".join(path), origin_of(path, claims)
        shown = {"setting": name, "value": value, "from": origin}
        typer.echo(json.dumps(shown) if as_json else f"{name} = {value}  # {origin}")
