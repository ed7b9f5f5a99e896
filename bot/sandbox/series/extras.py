"""The opt-in signals of one service (bot/sandbox/exporters/catalog.py), minute by minute, and its replicas.

Each signal has its own seeded noise, so adding one to a service never changes the draws of the golden signals.
Replicas follow the load when the service has an autoscaler (`hpa_max_replicas`): the pods the HPA wants are the
baseline scaled by the last five minutes' traffic, within its 10 % tolerance, held for five minutes before a scale
down (the stabilisation window), and never beyond its min and max. `hpa_wanted` keeps what it would want without
the max: above the max, the HPA is ScalingLimited.
"""

from __future__ import annotations

import math
import random
from datetime import datetime

from bot.sandbox.exporters.catalog import SIGNALS
from bot.sandbox.scenario import Scenario, Service
from bot.sandbox.series.shapes import apply_effect, baseline_series, seed_for, shape_of

HPA_TOLERANCE = 0.1
HPA_WINDOW_MINUTES = 5
_REPLICA_KEYS = ("replicas", "hpa_min_replicas", "hpa_max_replicas")


def extra_values(
    scenario: Scenario, svc: Service, start: datetime, rels: list[int], qps: list[float]
) -> dict[str, list[float]]:
    """Every opt-in signal the service carries, service-wide (effects narrowed to some pods come later)."""
    carried = scenario.carried(svc.name)
    out = {key: signal_series(scenario, svc, key, start, rels) for key in carried if key not in _REPLICA_KEYS}
    if "replicas" in carried:
        out |= replica_values(scenario, svc, start, rels, qps)
    if "disk_used_gb" in out:
        out["disk_used_gb"] = [min(u, c) for u, c in zip(out["disk_used_gb"], out["disk_capacity_gb"], strict=True)]
    if "pool_active" in out and "pool_max" in out:
        out["pool_active"] = [min(a, m) for a, m in zip(out["pool_active"], out["pool_max"], strict=True)]
    return out


def signal_series(scenario: Scenario, svc: Service, key: str, start: datetime, rels: list[int]) -> list[float]:
    signal = SIGNALS[key]
    rng = random.Random(seed_for(scenario.name, svc.name, "signal", key))
    amplitude = shape_of(scenario, "qps")[1] if signal.daily else 0.0
    series = baseline_series(svc.baseline(key), start, len(rels), rng, signal.noise, amplitude)
    for effect in (e for e in scenario.timeline if e.service == svc.name and e.metric == key and not e.scoped):
        apply_effect(effect, series, rels, svc.baseline(key), _end(scenario, effect.end_minutes))
    if signal.unit == "ratio":
        series = [min(v, 1.0) for v in series]
    return [float(round(v)) for v in series] if signal.integer else series


def replica_values(
    scenario: Scenario, svc: Service, start: datetime, rels: list[int], qps: list[float]
) -> dict[str, list[float]]:
    """The Deployment's replicas each minute and, with an HPA, its bounds and what it wants."""
    base = svc.baseline("replicas")
    hpa = "hpa_max_replicas" in scenario.carried(svc.name)
    wanted = [base * load for load in _load(qps, svc.qps)] if hpa else [base] * len(rels)
    for effect in (e for e in scenario.timeline if e.service == svc.name and e.metric == "replicas"):
        apply_effect(effect, wanted, rels, base, _end(scenario, effect.end_minutes))
    if not hpa:
        return {"replicas": [float(max(0, round(w))) for w in wanted]}
    high = signal_series(scenario, svc, "hpa_max_replicas", start, rels)
    low = signal_series(scenario, svc, "hpa_min_replicas", start, rels)
    desired = _stabilised([max(1, math.ceil(w - 1e-9)) for w in wanted])
    wants = [max(lo, d) for lo, d in zip(low, desired, strict=True)]
    replicas = [min(w, hi) for w, hi in zip(wants, high, strict=True)]
    return {"replicas": replicas, "hpa_wanted": wants, "hpa_max_replicas": high, "hpa_min_replicas": low}


def _load(qps: list[float], base: float) -> list[float]:
    """Traffic relative to its baseline, averaged over the last few minutes (what the HPA's metric sees)."""
    out = []
    for i in range(len(qps)):
        window = qps[max(0, i - HPA_WINDOW_MINUTES + 1) : i + 1]
        out.append(sum(window) / len(window) / base if base else 1.0)
    return out


def _stabilised(raw: list[int]) -> list[float]:
    """The HPA's choice each minute: no change within its tolerance, scale-downs only after the window."""
    out: list[float] = []
    current = float(raw[0]) if raw else 0.0
    for i, want in enumerate(raw):
        held = max(raw[max(0, i - HPA_WINDOW_MINUTES + 1) : i + 1])  # the highest recent wish wins a scale-down
        target = want if want > current else held
        if current and abs(target / current - 1) > HPA_TOLERANCE:
            current = float(target)
        out.append(current)
    return out


def _end(scenario: Scenario, end: int | None) -> int | None:
    return end if end is not None else scenario.resolved_minutes
