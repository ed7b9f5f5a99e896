"""Deploy discovery for `opsbot init` and the deploy checks of `opsbot doctor`.

`discover_deploys` inspects a deploy repository and/or a deploy-events index and returns the deploys settings to
write, each with the evidence for it (layout recognised, services found, environment folders, tags or not), and
what it could not find. `check_deploys` proves a configured source against the topology's services: each one yields
deploys, and a pattern or field that matches nothing is named, with a suggestion where one would work.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tools.base import ToolError
from tools.deploys.filters import FilteredDeploys
from tools.deploys.query import DeploySource, Finding

LOOKBACK = timedelta(days=90)


@dataclass(frozen=True)
class DeployDiscovery:
    """The [deploys] settings found (name -> value, ready for the config file), why, and what is missing."""

    settings: dict[str, object] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    missing: tuple[str, ...] = ()


def discover_deploys(git_repo: str | Path | None = None, es_client: Any = None, index: str = "") -> DeployDiscovery:
    """Inspect what the user named (a repository path, an index with its client) and say what each shows.

    When both are given, the repository's settings are chosen if it has service folders or deploy tags, else the
    index's; the findings of both are kept."""
    from tools.deploys.git.discovery import discover_repository
    from tools.deploys.indexdiscovery import discover_index

    if git_repo is None and not index:
        return DeployDiscovery(missing=("no deploy source given: name a repository (--deploys-git) or an index",))
    found: list[tuple[dict[str, object], list[Finding], list[str]]] = []
    if git_repo is not None:
        try:
            found.append(discover_repository(git_repo))
        except ToolError as exc:
            found.append(({}, [Finding("deploys.git_repo", str(git_repo), str(exc), ok=False)], [str(exc)]))
    if index and es_client is not None:
        found.append(discover_index(es_client, index))
    elif index:
        found.append(({}, [], [f"the deploy index {index}: no Elasticsearch connection to read it with"]))
    usable = [settings for settings, findings, _ in found if _usable(settings, findings)]
    return DeployDiscovery(
        usable[0] if usable else {},
        tuple(f for _, findings, _ in found for f in findings),
        tuple(m for _, _, missing in found for m in missing),
    )


def check_deploys(source: DeploySource, services: Sequence[str], now: datetime) -> list[Finding]:
    """The source's own checks, then per service: it has deploys, and how many in the last 90 days."""
    findings = source.check()
    try:
        known = source.services()
        recent = source.read(None, now - LOOKBACK, now)
    except ToolError as exc:  # said once: the source's own check names the setting that breaks it
        said = any(not f.ok for f in findings)
        return findings if said else [*findings, Finding("deploys.source", source.describe(), str(exc), ok=False)]
    setting = str(getattr(source, "service_setting", "deploys.source"))
    counts: dict[str, int] = {}
    for record in recent.records:
        counts[record.service] = counts.get(record.service, 0) + 1
    for service in services:
        findings.append(_service_finding(source, setting, service, known, counts.get(service, 0)))
    findings += [Finding("deploys", "last 90 days", note) for note in recent.notes]
    if isinstance(source, FilteredDeploys):
        findings += source.check_environments(now - LOOKBACK, now)
    return findings


def _service_finding(source: DeploySource, setting: str, service: str, known: Sequence[str], recent: int) -> Finding:
    if service not in known:
        close = difflib.get_close_matches(service, list(known), n=1)
        listed = ", ".join(known[:10]) or "none"
        evidence = f"{source.describe()} has no deploys of {service!r} (services it has: {listed})"
        return Finding(setting, service, evidence, ok=False, suggestion=close[0] if close else "")
    versions = source.versions(service)
    if not versions:
        return Finding(setting, service, f"{source.describe()} knows {service!r} but lists no deploy of it", ok=False)
    evidence = f"{len(versions)} versions, newest {versions[0]}; {recent} deploys in the last 90 days"
    return Finding(setting, service, evidence)


def _usable(settings: dict[str, object], findings: Sequence[Finding]) -> bool:
    """A repository with service folders or deploy tags; an index with its time, service and version fields."""
    if settings.get("source") == "git":
        return bool(settings.get("service_path") or settings.get("tag_pattern"))
    broken = ("deploys.timestamp_field", "deploys.service_field", "deploys.version_field", "deploys.index")
    return bool(settings) and not any(not f.ok and f.setting in broken for f in findings)
