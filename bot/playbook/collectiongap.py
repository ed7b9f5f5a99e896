"""A gap in metrics collection: the asked service's series stopped when (nearly) every other service's did.

query_metrics says so on its `stopped:` line (`cause: collection gap`,
tools/metrics/collection.py). That is no change of
the service: Prometheus restarted or lost its targets, a remote-write or federation lag, a partition. An SRE says
the metrics are missing for everything from HH:MM, checks what still can be checked (the service's deploys and
logs around that minute, and whether it still logs after it), and calls the conclusion partial.
"""

from __future__ import annotations

from datetime import datetime

from bot.playbook.evidence import Gap
from bot.playbook.findings import Findings, ServiceHealth
from bot.playbook.probes import ProbeRun, check_deploys, check_logs, iso_from_moment
from tools.results import logs_of


def collection_gap(findings: Findings, service: str) -> tuple[str, Gap] | None:
    """(metric, gap) of the service's earliest series that stopped with the collection, when none of its metrics
    changed otherwise; None when there is no gap or something did change."""
    health = findings.health.get(service)
    if health is None or not health.gaps or health.changes():
        return None
    return min(health.gaps.items(), key=lambda item: item[1].at)


def gapped_service(findings: Findings) -> str | None:
    """After a scan that found no change: the first scanned service whose series stopped with the collection."""
    return next((name for name in findings.health if collection_gap(findings, name) is not None), None)


def check_around_gap(run: ProbeRun, findings: Findings, service: str) -> bool:
    """With a collection gap and no change: the service's deploys and error logs around it, and whether it still
    logs after it. True when there was a gap to check (the other walks are then pointless: nothing has metrics)."""
    found = collection_gap(findings, service)
    if found is None:
        return False
    metric, gap = found
    check_deploys(run, findings, service, (metric, gap.at), what="stopped being collected")
    check_logs(run, findings, service, (metric, gap.at))
    if "query_logs" in run.tools:
        thought = (
            f"{service}'s metrics stopped at {gap.at:%H:%M} with {gap.services}'s: a gap in collection. Its "
            "logs do not go through Prometheus; do they go on after that minute?"
        )
        args = {
            "service": service,
            "start": iso_from_moment(gap.at),
            "end": iso_from_moment(run.window.end),
            "limit": 3,
        }
        step = run.probe(thought, "query_logs", args)
        if not run.failed():
            summary = logs_of(step) if step is not None else None
            findings.after_gap = summary.total if summary is not None else 0
    findings.unknowns.append(
        f"what any metric did after {gap.at:%H:%M} UTC: none was collected; check Prometheus "
        "itself (its targets page, whether it restarted, remote-write or federation lag)"
    )
    return True


def gap_headline(findings: Findings) -> str | None:
    """The partial conclusion of a collection gap; None when the asked service shows none."""
    service = findings.service
    found = collection_gap(findings, service)
    if found is None:
        return None
    gap = found[1]
    return (
        f"No conclusion (partial): metrics are missing for {gap.services} from {gap.at:%H:%M} UTC, a gap in "
        f"metrics collection (Prometheus stopped scraping or lost its targets, a remote-write lag, a partition), "
        f"not a change in {service}. Without metrics after {gap.at:%H:%M}, what could still be checked: "
        f"{_logs_after(findings, gap.at)}; {_errors_around(findings)}; {_deploys_around(findings)}."
    )


def gap_evidence(health: ServiceHealth) -> list[str]:
    """One line per metric whose series stopped with the collection."""
    return [
        f"{health.service} {metric}: no samples after {gap.at:%H:%M} UTC, like {gap.services} (a gap in "
        "collection, not a change of the service): not checked after that minute"
        for metric, gap in health.gaps.items()
    ]


def _logs_after(findings: Findings, at: datetime) -> str:
    if findings.after_gap is None:
        return f"whether {findings.service} still logs after {at:%H:%M} (not checked)"
    if findings.after_gap == 0:
        return f"{findings.service} logged nothing after {at:%H:%M} either (its logs stopped too)"
    return f"{findings.service} still logs after {at:%H:%M} ({findings.after_gap:,} lines), so it is running"


def _errors_around(findings: Findings) -> str:
    top = findings.top_signature(findings.service)
    if top is None:
        return f"no error cluster in {findings.service}'s logs around it"
    level = findings.log_levels.get(findings.service, "ERROR")
    return f"its top {level} cluster around it: {top.quoted} ({top.count:,} lines)"


def _deploys_around(findings: Findings) -> str:
    if (deploy := findings.deploy) is not None:
        return (
            f"deploy {deploy.service} {deploy.version} at {deploy.at:%H:%M} came before it; with no metrics after "
            "it, whether it changed anything is not known"
        )
    if findings.deploys_checked:
        return "no deploy in the hour before it"
    return "deploys (not checked)"
