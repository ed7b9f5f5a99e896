"""What the verdict says when the asked service's metrics show no change point (its flat line).

Flat over the window is not "no incident": the trouble may be older than the window or constant across it. The
playbook then looks further back once (bot/playbook/onset.py). "No incident found" is said only when the metrics
were flat over that wider look too AND the service's logs show no heavy error signature; heavy errors over flat
metrics say the problem is older than the metrics or constant, and what that leaves unknown. A verdict that
found no cause always says what is still open, never "nothing specific".
"""

from __future__ import annotations

from datetime import datetime

from bot.playbook.evidence import LogSignature
from bot.playbook.findings import Findings

HEAVY_ERROR_LINES = 50  # an ERROR signature this common over flat metrics is a problem, not background


def flat_headline(findings: Findings) -> str:
    """The headline when the asked service did not change (a dependency that moved alone is not felt by it)."""
    service, lookback = findings.service, findings.lookback
    reach = f", nor over {lookback.label}{_back_to(lookback.data_from)}" if lookback else ""
    heavy = heavy_signature(findings)
    if heavy is not None:
        return (
            f"No change found in {service}'s metrics over {findings.window_label}{reach}, but {service} logs "
            f"{heavy.count:,}x {heavy.quoted}: the problem is older than the metrics or constant across them, "
            "so when it started and what changed then are not known."
        )
    capped = findings.health[service].capped if service in findings.health else {}
    if capped:  # flat at a histogram's top finite bucket is no proof of calm (tools/metrics/ceiling.py)
        cap = "; ".join(f"{metric}: {reading}" for metric, reading in capped.items())
        return f"No change seen in {service}'s metrics over {findings.window_label}{reach}, but {cap}."
    scope = f"{service}'s metrics show no" if service else "no service shows a"  # not "no service shows no"
    aside = f" ({findings.origin} moved, but {service} did not feel it.)" if findings.origin and service else ""
    return f"No incident found: {scope} significant change over {findings.window_label}{reach}.{aside}"


def heavy_signature(findings: Findings) -> LogSignature | None:
    """The asked service's top signature when it is an ERROR one of at least HEAVY_ERROR_LINES lines."""
    top = findings.top_signature(findings.service)
    if top is None or top.count < HEAVY_ERROR_LINES or findings.log_levels.get(findings.service) != "ERROR":
        return None
    return top


def lookback_evidence(findings: Findings) -> list[str]:
    """The wider look that found nothing, as an evidence line ([] when there was none, or it found the onset)."""
    lookback = findings.lookback
    if lookback is None or lookback.onset:
        return []
    return [f"{findings.service} over {lookback.label}: no lasting change outside {lookback.flat_label} either"]


def open_questions(findings: Findings) -> list[str]:
    """What a verdict that found no cause leaves open."""
    lookback, service = findings.lookback, findings.service
    lines = []
    if lookback is not None and not lookback.onset:
        when = f"{lookback.data_from:%m-%d %H:%M} UTC" if lookback.data_from else f"the start of {lookback.label}"
        lines.append(f"not checked: anything before {when}, where the metrics Prometheus returned begin")
    health = findings.health.get(service)
    heavy = heavy_signature(findings)
    if health is not None and health.changes():
        lines.append("what caused the change: no deploy, downstream change or error cluster checked here explains it")
    elif heavy is not None:
        lines.append(
            f"when {service}'s {heavy.count:,} errors began: they run through the whole window read, so "
            "no deploy could be matched to their start"
        )
    elif service:
        lines.append(f"anything {service}'s metrics do not measure (one endpoint, one customer, the client side)")
    return lines or ["the cause: the checks above did not find one"]


def _back_to(moment: datetime | None) -> str:
    # month-day as the tool printed it: a full date is a claim the grounding check wants verbatim in an observation
    return f" (the metrics reach back to about {moment:%m-%d %H:%M} UTC)" if moment else ""
