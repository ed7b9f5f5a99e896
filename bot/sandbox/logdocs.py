"""Log documents for a scenario: INFO background that agrees with the metrics, plus the scenario's patterns.

Documents follow the contract (`@timestamp` ISO Z, service, level, message, logger, host, trace_id and an
optional multi-line stack_trace). A scenario stays at a few thousand documents: background is dense (one line
per service-minute) only within two hours of the incident, and each pattern runs at its full rate for its
first hour, then thinned, so a day-long incident does not swamp the store; a `steady` pattern (noise that has
always been there) and a periodic one (a job) keep their rate.

A per-pod service's lines come from its pods (bot/sandbox/placement.py): `host` is the pod, and the document
carries pod, node, zone, version and namespace, as a log shipper on Kubernetes adds them. A service whose team
writes structured lines (`log_format = "json"` or `"logfmt"`) has the whole line in `message`.
"""

from __future__ import annotations

import json
import math
import random
import string
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bot.sandbox.exporters.catalog import STATUS_SIGNALS
from bot.sandbox.openmetrics import SIGMA, median_s_from_p99_ms
from bot.sandbox.placement import Pod
from bot.sandbox.scenario import LogPattern, Scenario, Service
from bot.sandbox.series.pods import PodSignals
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
    docs = [d for svc in inside for d in _background(scenario, svc, by_service[svc.name], incident, now)]
    docs += [d for p in scenario.logs for d in _pattern_docs(scenario, p, by_service[p.service], incident, now)]
    return sorted(docs, key=lambda d: str(d["@timestamp"]))


def serving_pod(sig: ServiceSignals, index: int, rng: random.Random) -> PodSignals | None:
    """One of the pods that answer requests at minute `index` (None: none does)."""
    serving = [p for p in sig.pods if p.pod.alive(index) and p.scraped[index - p.pod.first]]
    return rng.choice(serving) if serving else None


def pinned(doc: dict[str, Any], pod: Pod) -> dict[str, Any]:
    """The document as a pod wrote it: host is the pod, and the pod's placement goes along."""
    where = {"pod": pod.name, "node": pod.node, "zone": pod.zone, "namespace": pod.namespace, "version": pod.version}
    return {**doc, "host": pod.name, **where}


_CONTRACT = ("@timestamp", "service", "level", "message", "logger", "host", "trace_id", "stack_trace")


def with_format(doc: dict[str, Any], namespace: str, form: str) -> dict[str, Any]:
    """Add the service's own namespace, and write a structured team's line into `message` (JSON or logfmt) with
    the document's extra fields in it, as such a service prints it."""
    if namespace and "namespace" not in doc:
        doc["namespace"] = namespace
    if form == "plain":
        return doc
    extra = {k: v for k, v in doc.items() if k not in _CONTRACT}
    head = {"timestamp": doc["@timestamp"], "level": doc["level"], "service": doc["service"], "logger": doc["logger"]}
    if form == "json":
        trace = {"stack_trace": doc["stack_trace"]} if doc.get("stack_trace") else {}
        line = {**head, "message": doc["message"], **extra, **trace}
        return {**doc, "message": json.dumps(line, ensure_ascii=False)}
    pairs = {"ts": head["timestamp"], "level": doc["level"].lower(), "service": doc["service"], "logger": doc["logger"]}
    pairs |= {"msg": doc["message"], **extra}
    return {**doc, "message": " ".join(f"{k}={_logfmt_value(str(v))}" for k, v in pairs.items())}


def _logfmt_value(text: str) -> str:
    if text and not any(c in text for c in ' "=\\'):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_jsonl(docs: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)


def _background(
    scenario: Scenario, svc: Service, sig: ServiceSignals, incident: datetime, now: datetime
) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed_for("background", svc.name))
    logger, template = _BACKGROUND.get(svc.kind, _BACKGROUND["service"])
    statuses = [key for key in STATUS_SIGNALS if key in scenario.carried(svc.name)]
    minute = sig.start
    while minute < now:
        near = abs((minute - incident).total_seconds()) <= DENSE_WINDOW_MINUTES * 60
        if near or int(minute.timestamp() // 60) % SPARSE_EVERY_MINUTES == 0:
            doc = _background_doc(svc, sig, minute, rng, (logger, template), statuses)
            if doc is not None:
                yield with_format(doc, scenario.namespace_of(svc.name) if svc.namespace else "", svc.log_format)
        minute += timedelta(minutes=1)


def _background_doc(
    svc: Service,
    sig: ServiceSignals,
    minute: datetime,
    rng: random.Random,
    line: tuple[str, str],
    statuses: list[str],
) -> dict[str, Any] | None:
    """One access-log line of the minute; a per-pod service's comes from one of its serving pods (none: no line)."""
    index = sig.index(minute)
    pod = serving_pod(sig, index, rng) if sig.pods else None
    if sig.pods and pod is None:
        return None

    def value(metric: str) -> float:
        return pod.at(metric, index) if pod is not None else sig.values[metric][index]

    median_s = median_s_from_p99_ms(value("p99_ms"))
    failed = rng.random() < value("error_ratio")
    status = "503" if failed else _client_status(rng, statuses, value) if statuses else "200"
    values = {
        "svc": svc.name,
        "svc_table": svc.name.replace("-db", "").replace("-", "_"),
        "method": rng.choice(("GET", "GET", "GET", "POST")),
        "status": status,
        "route": rng.choice(svc.downstream or (svc.name,)),
        "ms": str(round(1000 * median_s * math.exp(rng.gauss(0, SIGMA)))),
    }
    when = minute + timedelta(milliseconds=rng.randrange(60_000))
    level = "WARN" if failed else "INFO"
    logger, template = line
    doc = _doc(svc.name, level, logger.replace("$svc", svc.name), _fill(template, rng, values), when, rng)
    return pinned(doc, pod.pod) if pod is not None else doc


def _client_status(rng: random.Random, statuses: list[str], value: Callable[[str], float]) -> str:
    """A 4xx by the service's shares of them this minute, else 200 (drawn only for services that carry 4xx)."""
    draw, floor = rng.random(), 0.0
    for key in statuses:
        floor += value(key)
        if draw < floor:
            return key.removeprefix("status_")
    return "200"


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
    keeps_rate = pattern.steady or pattern.every_minutes > 0  # steady noise and periodic jobs are never thinned
    namespace = scenario.namespace_of(pattern.service) if scenario.service(pattern.service).namespace else ""
    form = pattern.format or scenario.service(pattern.service).log_format
    minute, index = max(begin, sig.start), 0
    while minute < stop:
        rate = pattern.per_minute if keeps_rate or index < FULL_RATE_MINUTES else tail_rate
        if _runs(pattern, int((minute - begin).total_seconds() // 60)):
            for _ in range(int(rate) + (rng.random() < rate - int(rate))):
                doc = _pattern_doc(pattern, sig, minute, rng, fixed)
                if doc is not None:
                    yield with_format(doc, namespace, form)
        minute, index = minute + timedelta(minutes=1), index + 1


def _runs(pattern: LogPattern, since_start: int) -> bool:
    return not pattern.every_minutes or since_start % pattern.every_minutes < pattern.for_minutes


def _pattern_doc(
    pattern: LogPattern, sig: ServiceSignals, minute: datetime, rng: random.Random, fixed: dict[str, str]
) -> dict[str, Any] | None:
    """One line of the pattern; a per-pod service's comes from one of the pods it names (none reachable: no line)."""
    when = minute + timedelta(milliseconds=rng.randrange(60_000))
    doc = _doc(pattern.service, pattern.level, pattern.logger, _fill(pattern.message, rng, fixed), when, rng)
    if pattern.stack_trace:
        doc["stack_trace"] = _fill(pattern.stack_trace.strip("\n"), rng, fixed)
    doc |= {key: _fill(text, rng, fixed) for key, text in pattern.fields.items()}
    if not sig.pods:
        return doc
    # a crash-looping pod still logs; one on an unreachable node ships nothing
    pods = [p for p in sig.pods if p.pod.reachable(sig.index(minute)) and _matches(pattern, p.pod)]
    return pinned(doc, rng.choice(pods).pod) if pods else None


def _matches(pattern: LogPattern, pod: Pod) -> bool:
    return (
        (not pattern.on_version or pattern.on_version == pod.version)
        and (not pattern.on_node or pattern.on_node == pod.node)
        and (not pattern.on_zone or pattern.on_zone == pod.zone)
    )


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
