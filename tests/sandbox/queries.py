"""PromQL against a running sandbox's real Prometheus, at a moment relative to its incident."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from prometheus_api_client import PrometheusConnect


def at(box: Any, minutes: float) -> datetime:
    """The moment `minutes` after the sandbox's incident (negative: before it)."""
    return box.incident_at + timedelta(minutes=minutes)


def vector(box: Any, promql: str, minutes: float) -> list[dict[str, Any]]:
    client = PrometheusConnect(url=box.prometheus_url, disable_ssl=True)
    return list(client.custom_query(promql, params={"time": at(box, minutes).timestamp()}))


def value(box: Any, promql: str, minutes: float) -> float:
    """The single value of `promql` `minutes` after the incident (fails when there is none)."""
    found = vector(box, promql, minutes)
    assert len(found) == 1, f"{promql} at {minutes:+} min: {found}"
    return float(found[0]["value"][1])


def by_label(box: Any, promql: str, minutes: float, label: str) -> dict[str, float]:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in vector(box, promql, minutes)}
