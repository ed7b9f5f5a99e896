"""Synthetic series for the detection benchmark and its floor test: lognormal noise with outliers, on a flat base or
a daily curve, and low-traffic series whose every point rests on a few requests.

- `lognormal`: each point is level x daily curve x exp(N(0, sigma)); OUTLIER_SHARE of the points are then
  multiplied (or divided, half the time) by 3-10x, as a scrape glitch or a GC pause would.
- `low_traffic`: one pod serving `rate` requests a second, over a daily curve of +-DAILY_AMPLITUDE. Each 5-minute
  bucket holds Poisson(rate x 300 x curve) requests. A latency point is the p99 of that bucket's request
  latencies (lognormal around 50 ms, SLOW_SHARE of them a slow 5-40x tail: GC, a cold cache); an error point is
  the bucket's error ratio (each request fails with `error` probability). A bucket without requests has no point,
  as Prometheus gives none. The count of requests behind each point comes back with it.
"""

from __future__ import annotations

import math
import zlib
from datetime import UTC, datetime, timedelta

import numpy as np

N = 288
T0 = datetime(2026, 11, 28, tzinfo=UTC)
TIMES = [T0 + timedelta(minutes=5 * i) for i in range(N)]
OUTLIER_SHARE = 0.01
DAILY_AMPLITUDE = 0.4
SLOW_SHARE = 0.02
BUCKET_S = 300.0


def generator(name: str) -> np.random.Generator:
    """A generator seeded by a name (stable across runs, unlike hash())."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def daily_curve(rng: np.random.Generator, amplitude: float) -> np.ndarray:
    """1 + amplitude x sin over the N points (one day at 5 minutes), at a random phase."""
    phase = rng.uniform(0, 2 * math.pi)
    return 1 + amplitude * np.sin(phase + 2 * math.pi * np.arange(N) / N)


def lognormal(levels: np.ndarray, sigma: float, rng: np.random.Generator, amplitude: float = 0.0) -> list[float]:
    """`levels` x a daily curve of +-`amplitude` x lognormal noise, with OUTLIER_SHARE outliers."""
    values = levels * daily_curve(rng, amplitude) * np.exp(rng.normal(0, sigma, N))
    outliers = rng.random(N) < OUTLIER_SHARE
    factors = rng.uniform(3, 10, N) ** rng.choice([-1, 1], N)
    return np.where(outliers, values * factors, values).tolist()


def low_traffic(
    rate: float, rng: np.random.Generator, kind: str, factor: np.ndarray
) -> tuple[list[datetime], list[float], list[float]]:
    """(times, values, counts) of one pod's p99 latency (kind "p99") or error ratio (kind "errors"); `factor`
    multiplies every request's latency, or its chance of failing, point by point."""
    counts = rng.poisson(rate * BUCKET_S * daily_curve(rng, DAILY_AMPLITUDE))
    times, values, kept = [], [], []
    for i, count in enumerate(counts.tolist()):
        if count == 0:
            continue
        if kind == "p99":
            latencies = 0.05 * np.exp(rng.normal(0, 0.4, count))
            slow = rng.random(count) < SLOW_SHARE
            latencies = np.where(slow, latencies * rng.uniform(5, 40, count), latencies) * factor[i]
            values.append(float(np.quantile(latencies, 0.99)))
        else:
            values.append(float(rng.binomial(count, min(1.0, 0.01 * factor[i]))) / count)
        times.append(TIMES[i])
        kept.append(float(count))
    return times, values, kept
