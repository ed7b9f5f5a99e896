"""The metric catalogue as the playbook reads it: the metric it reads for each role, the saturation signals it
reads after the golden signals, and, per service, the metrics that service's catalogue says it does not measure
(not queried: the answer names them as not checked)."""

from __future__ import annotations

import logging

from bot.config import Settings

log = logging.getLogger(__name__)


def metric_roles(settings: Settings) -> dict[str, str]:
    """role -> metric name; the first catalogue entry with a role wins (a second one is logged and ignored).
    Saturation is the one role many entries share (saturation_metrics)."""
    roles: dict[str, str] = {}
    for name, metric in settings.prometheus.metrics.items():
        if metric.role == "saturation":
            continue
        if metric.role and metric.role in roles:
            log.warning(
                "metric %r has role %r, already taken by %r; the playbook reads %r",
                name,
                metric.role,
                roles[metric.role],
                roles[metric.role],
            )
        elif metric.role:
            roles[metric.role] = name
    return roles


def saturation_metrics(settings: Settings) -> list[str]:
    """The catalogue entries with the role "saturation", in catalogue order: the playbook reads each."""
    return [name for name, metric in settings.prometheus.metrics.items() if metric.role == "saturation"]


def unmeasured_metrics(settings: Settings) -> dict[str, frozenset[str]]:
    """service -> the catalogue metrics it does not measure (`prometheus.services.<name>.not_measured`)."""
    return {name: frozenset(own.not_measured) for name, own in settings.prometheus.services.items() if own.not_measured}
