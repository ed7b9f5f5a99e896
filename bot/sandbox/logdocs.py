"""Log documents for a scenario: INFO background that agrees with the metrics, plus the scenario's patterns.

Documents follow the contract (`@timestamp` ISO Z, service, level, message, logger, host, trace_id and an
optional multi-line stack_trace). A scenario stays at a few thousand documents: background is dense (one line
per service-minute) only within two hours of the incident, and each pattern runs at its full rate for its
first hour, then thinned, so a day-long incident does not swamp the store.
"""

from __future__ import annotations

import json
import math
import random
import string
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bot.sandbox.openmetrics import SIGMA, median_s_from_p99_ms
from bot.sandbox.scenario import LogPattern, Scenario, Service
from bot.sandbox.signals import ServiceSignals, seed_for

DENSE_WINDOW_MINUTES = 120
SPARSE_EVERY_MINUTES = 10
FULL_RATE_MINUTES = 60
MAX_TAIL_DOCS = 150  # per pattern, after its first hour
PODS_PER_SERVICE = 3

_BACKGROUND = {
    "service": ("com.example.$svc.web.RequestLogger", "$method /api/$svc/$id -> $status ($ms ms)"),
    "gateway": ("gateway.access", "$method /api/$route -> $status ($ms ms) upstream=$route"),
    "database": ("postgres", "duration: $ms ms  statement: SELECT * FROM $svc_table WHERE id = $n"),
    "cache": ("redis", "GET $svc:item:$id served in $ms ms"),
    "dns": ("coredns", '[INFO] 10.4.$n.17:53 - $n "A IN $route.svc.cluster.local. udp" NOERROR qr,aa,rd $ms ms'),
}


def iso_z(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def pod_names(service: str) -> list[str]:
    """Stable Kubernetes-style pod names, e.g. order-7f9c6d8b5-x2k4q."""
    rng = random.Random(seed_for("pods", service))
    rs = "".join(rng.choices("bcdfghjkmnpqrstvwxz2456789", k=9))
    return [f"{service}-{rs}-{''.join(rng.choices('bcdfghjklmnpqrstvwxz24579', k=5))}" for _ in range(PODS_PER_SERVICE)]


def log_docs(scenario: Scenario, signals: list[ServiceSignals], now: datetime) -> list[dict[str, Any]]:
    """All documents from the start of the signals up to `now`, sorted by time."""
    incident = scenario.incident_at(now)
    by_service = {sig.service: sig for sig in signals}
    inside = [svc for svc in scenario.services if svc.kind != "external"]  # a third party's logs are not ours
    docs = [d for svc in inside for d in _background(svc, by_service[svc.name], incident, now)]
    docs += [d for p in scenario.logs for d in _pattern_docs(scenario, p, by_service[p.service], incident, now)]
    return sorted(docs, key=lambda d: str(d["@timestamp"]))


def write_jsonl(docs: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)


def _background(svc: Service, sig: ServiceSignals, incident: datetime, now: datetime) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed_for("background", svc.name))
    logger, template = _BACKGROUND.get(svc.kind, _BACKGROUND["service"])
    minute = sig.start
    while minute < now:
        near = abs((minute - incident).total_seconds()) <= DENSE_WINDOW_MINUTES * 60
        if near or int(minute.timestamp() // 60) % SPARSE_EVERY_MINUTES == 0:
            yield _background_doc(svc, sig, minute, rng, logger, template)
        minute += timedelta(minutes=1)


def _background_doc(
    svc: Service, sig: ServiceSignals, minute: datetime, rng: random.Random, logger: str, template: str
) -> dict[str, Any]:
    median_s = median_s_from_p99_ms(sig.at("p99_ms", minute))
    failed = rng.random() < sig.at("error_ratio", minute)
    values = {
        "svc": svc.name,
        "svc_table": svc.name.replace("-db", "").replace("-", "_"),
        "method": rng.choice(("GET", "GET", "GET", "POST")),
        "status": "503" if failed else "200",
        "route": rng.choice(svc.downstream or (svc.name,)),
        "ms": str(round(1000 * median_s * math.exp(rng.gauss(0, SIGMA)))),
    }
    when = minute + timedelta(milliseconds=rng.randrange(60_000))
    level = "WARN" if failed else "INFO"
    return _doc(svc.name, level, logger.replace("$svc", svc.name), _fill(template, rng, values), when, rng)


def _pattern_docs(
    scenario: Scenario, pattern: LogPattern, sig: ServiceSignals, incident: datetime, now: datetime
) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed_for("pattern", scenario.name, pattern.service, pattern.message))
    begin = incident + timedelta(minutes=pattern.start_minutes)
    stop_rel = pattern.end_minutes if pattern.end_minutes is not None else scenario.resolved_minutes
    stop = min(now, incident + timedelta(minutes=stop_rel)) if stop_rel is not None else now
    tail_minutes = max(1.0, (stop - begin).total_seconds() / 60 - FULL_RATE_MINUTES)
    tail_rate = min(pattern.per_minute / 10, MAX_TAIL_DOCS / tail_minutes)
    fixed = {"incident": incident.strftime("%a %b %d %H:%M:%S UTC %Y")}
    minute, index = max(begin, sig.start), 0
    while minute < stop:
        rate = pattern.per_minute if index < FULL_RATE_MINUTES else tail_rate
        for _ in range(int(rate) + (rng.random() < rate - int(rate))):
            when = minute + timedelta(milliseconds=rng.randrange(60_000))
            doc = _doc(pattern.service, pattern.level, pattern.logger, _fill(pattern.message, rng, fixed), when, rng)
            if pattern.stack_trace:
                doc["stack_trace"] = _fill(pattern.stack_trace.strip("\n"), rng, fixed)
            yield doc
        minute, index = minute + timedelta(minutes=1), index + 1


def _fill(template: str, rng: random.Random, values: dict[str, str] | None = None) -> str:
    generated = {"n": str(rng.randint(1, 400)), "ms": str(rng.randint(900, 30000)), "id": f"{rng.getrandbits(40):010x}"}
    return string.Template(template).safe_substitute({**generated, **(values or {})})


def _doc(service: str, level: str, logger: str, message: str, when: datetime, rng: random.Random) -> dict[str, Any]:
    return {
        "@timestamp": iso_z(when),
        "service": service,
        "level": level,
        "message": message,
        "logger": logger,
        "host": rng.choice(pod_names(service)),
        "trace_id": f"{rng.getrandbits(128):032x}",
    }
