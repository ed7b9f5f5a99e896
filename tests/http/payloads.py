"""Request bodies as real senders shape them."""

from __future__ import annotations

from typing import Any


def alert_group(status: str = "firing", fingerprints: tuple[str, ...] = ("fp1",), **extra: Any) -> dict[str, Any]:
    """An Alertmanager v4 webhook body for one OrderLatencyHigh group (one alert per fingerprint)."""
    alerts = [
        {
            "status": status,
            "labels": {"alertname": "OrderLatencyHigh", "service": "order", "severity": "page"},
            "annotations": {"summary": "order p99 above 1 s", "description": f"p99 is 1.18 s ({fp})"},
            "startsAt": "2026-11-28T15:07:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "fingerprint": fp,
            "generatorURL": "http://prometheus/graph",
        }
        for fp in fingerprints
    ]
    return {
        "version": "4",
        "groupKey": '{}:{alertname="OrderLatencyHigh"}',
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "opsbot",
        "groupLabels": {"alertname": "OrderLatencyHigh"},
        "commonLabels": {"alertname": "OrderLatencyHigh", "service": "order"},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager",
        "alerts": alerts,
        **extra,
    }
