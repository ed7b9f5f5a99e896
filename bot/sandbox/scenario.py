"""Incident scenarios: data files in bot/sandbox/scenarios/<name>.toml read into frozen dataclasses.

Every time in a scenario is relative: the incident time to the run clock ("yesterday 15:05", "today 09:30",
"-45m"), and everything else (effects, deploys, log patterns) in minutes relative to the incident. The same
file therefore gives the same story on any day. scenarios/README.md describes the format for authors.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from bot.sandbox.cluster import Cluster, cluster_from_dict, cluster_problems

METRICS = ("p99_ms", "qps", "error_ratio", "cpu_cores", "memory_mb")
Shape = Literal["step", "ramp", "recover", "sawtooth"]
SHAPES = ("step", "ramp", "recover", "sawtooth")
_INCIDENT_RX = re.compile(r"^(?:(today|yesterday)\s+(\d{1,2}):(\d{2})|-(\d+)m)$")


class ScenarioError(ValueError):
    """A scenario file that does not describe a usable incident."""


@dataclass(frozen=True)
class Service:
    """One service's healthy baseline and its running version before the incident."""

    name: str
    p99_ms: float
    qps: float
    error_ratio: float = 0.001
    cpu_cores: float = 0.5
    memory_mb: float = 512.0
    version: str = "v1.0.0"
    kind: str = "service"  # service | gateway | database | cache | dns | external (a third party: no repo folder)
    downstream: tuple[str, ...] = ()

    def baseline(self, metric: str) -> float:
        return float(getattr(self, metric))


@dataclass(frozen=True)
class Effect:
    """From `at_minutes` (relative to the incident) `metric` of `service` moves to `to`.

    step: at once; ramp: linearly over ramp_minutes; recover: jumps to `to`, then returns linearly to the
    baseline over ramp_minutes (a cache warming up); sawtooth: climbs from baseline to `to` over
    ramp_minutes, then the pod is OOM-killed (restart counter +1) and it starts again.
    The effect ends at end_minutes (None = the scenario's resolved_minutes, or never).
    """

    service: str
    metric: str
    to: float
    at_minutes: int = 0
    shape: Shape = "step"
    ramp_minutes: int = 0
    end_minutes: int | None = None


@dataclass(frozen=True)
class FileChange:
    """A file under services/<service>/ whose content a deploy changes from `before` to `after`."""

    path: str
    before: str
    after: str


@dataclass(frozen=True)
class Deploy:
    service: str
    version: str
    at_minutes: int
    author: str
    summary: str
    files: tuple[FileChange, ...] = ()
    red_herring: bool = False


@dataclass(frozen=True)
class LogPattern:
    """Log lines of one kind. `message` and `stack_trace` may use $n, $ms, $id, $incident (string.Template)."""

    service: str
    level: str
    logger: str
    message: str
    per_minute: float
    start_minutes: int = 0
    end_minutes: int | None = None
    stack_trace: str = ""
    red_herring: bool = False


@dataclass(frozen=True)
class Runbook:
    """A Markdown runbook the scenario's team keeps in the deploy repository (runbooks/<file>)."""

    file: str
    text: str


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    question: str
    root_cause: str
    must_name: tuple[str, ...]
    incident: str
    services: tuple[Service, ...]
    timeline: tuple[Effect, ...] = ()
    deploys: tuple[Deploy, ...] = ()
    logs: tuple[LogPattern, ...] = ()
    resolved_minutes: int | None = None
    expect_incident: bool = True  # False: the right answer is "nothing is wrong"
    noise: float | None = None  # relative noise of latency, traffic and CPU (None: the small default)
    daily_amplitude: float | None = None  # the daily curve's amplitude (None: 0.25 on traffic and CPU only)
    kubernetes: Cluster | None = None  # the [kubernetes] block: the sandbox then serves a Kubernetes API
    runbooks: tuple[Runbook, ...] = ()  # besides the shared ones in bot/sandbox/runbooks
    collection_gap_minutes: int | None = None  # from here Prometheus holds no sample of any series (not scraping)
    collection_gap_services: tuple[str, ...] = ()  # ...of these services' series only (their targets lost); () = all

    @property
    def topology(self) -> dict[str, list[str]]:
        return {s.name: list(s.downstream) for s in self.services}

    @property
    def red_herrings(self) -> tuple[Deploy | LogPattern, ...]:
        items: tuple[Deploy | LogPattern, ...] = (*self.deploys, *self.logs)
        return tuple(x for x in items if x.red_herring)

    def service(self, name: str) -> Service:
        return next(s for s in self.services if s.name == name)

    def incident_at(self, now: datetime) -> datetime:
        """The incident's wall-clock time for a run whose clock reads `now` (UTC, tz-aware)."""
        return incident_time(self.incident, now)


def incident_time(spec: str, now: datetime) -> datetime:
    """Resolve "yesterday 15:05" / "today 09:30" / "-45m" against `now`."""
    match = _INCIDENT_RX.match(spec.strip())
    if match is None:
        raise ScenarioError(f"incident {spec!r}: use 'yesterday HH:MM', 'today HH:MM' or '-<minutes>m'")
    day, hour, minute, ago = match.groups()
    if ago is not None:
        return (now - timedelta(minutes=int(ago))).replace(second=0, microsecond=0)
    base = now - timedelta(days=1 if day == "yesterday" else 0)
    return base.replace(hour=int(hour), minute=int(minute), second=0, microsecond=0)


HELDOUT = "heldout"  # scenarios/heldout/: written before tuning the playbook, never tuned on


def scenario_names(folder: str = "") -> list[str]:
    """Names of the bundled scenarios, sorted; folder="heldout" gives the held-out ones as "heldout/<name>"."""
    root = resources.files("bot.sandbox") / "scenarios"
    where = root / folder if folder else root
    prefix = f"{folder}/" if folder else ""
    return sorted(prefix + p.name.removesuffix(".toml") for p in where.iterdir() if p.name.endswith(".toml"))


def load_scenario(ref: str) -> Scenario:
    """Read and validate a scenario: a bundled name, "heldout/<name>", or the path of a team's own .toml file."""
    if ref.endswith(".toml") and Path(ref).is_file():
        text = Path(ref).read_text(encoding="utf-8")
    elif ref in (known := scenario_names() + scenario_names(HELDOUT)):
        text = (resources.files("bot.sandbox") / "scenarios" / f"{ref}.toml").read_text(encoding="utf-8")
    else:
        raise ScenarioError(f"unknown scenario {ref!r}; known: {', '.join(known)} (or a path to a .toml file)")
    try:
        return scenario_from_dict(tomllib.loads(text))
    except (TypeError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"scenario {ref}: {exc}") from exc


def scenario_files(folder: Path) -> list[str]:
    """A team's own scenario files in `folder` (sorted paths), for `opsbot eval --scenarios DIR`."""
    if not folder.is_dir():
        raise ScenarioError(f"{folder} is not a folder of scenario .toml files")
    return sorted(str(p) for p in folder.glob("*.toml"))


def scenario_from_dict(data: dict[str, Any]) -> Scenario:
    """Build a Scenario from parsed TOML and check its references."""
    services = tuple(
        Service(name=n, **{**s, "downstream": tuple(s.get("downstream", ()))}) for n, s in data["services"].items()
    )
    deploys = tuple(
        Deploy(**{**d, "files": tuple(FileChange(**f) for f in d.get("files", ()))}) for d in data.get("deploys", ())
    )
    scenario = Scenario(
        name=data["name"],
        title=data["title"],
        question=data["question"],
        root_cause=data["root_cause"],
        must_name=tuple(data.get("must_name", ())),
        incident=data["incident"],
        services=services,
        timeline=tuple(Effect(**e) for e in data.get("timeline", ())),
        deploys=deploys,
        logs=tuple(LogPattern(**p) for p in data.get("logs", ())),
        resolved_minutes=data.get("resolved_minutes"),
        expect_incident=data.get("expect_incident", True),
        noise=data.get("noise"),
        daily_amplitude=data.get("daily_amplitude"),
        kubernetes=cluster_from_dict(data.get("kubernetes")),
        runbooks=tuple(Runbook(**r) for r in data.get("runbooks", ())),
        collection_gap_minutes=data.get("collection_gap_minutes"),
        collection_gap_services=tuple(data.get("collection_gap_services", ())),
    )
    _validate(scenario)
    return scenario


def _validate(scenario: Scenario) -> None:
    names = {s.name for s in scenario.services}
    problems = [
        f"downstream {d!r} of {s.name} is not a service"
        for s in scenario.services
        for d in s.downstream
        if d not in names
    ]
    items: tuple[Effect | Deploy | LogPattern, ...] = (*scenario.timeline, *scenario.deploys, *scenario.logs)
    for item in items:
        if item.service not in names:
            problems.append(f"{type(item).__name__.lower()} names unknown service {item.service!r}")
    problems += [
        f"collection gap names unknown service {n!r}" for n in scenario.collection_gap_services if n not in names
    ]
    problems += [f"effect metric {e.metric!r} not in {METRICS}" for e in scenario.timeline if e.metric not in METRICS]
    problems += [f"effect shape {e.shape!r} not in {SHAPES}" for e in scenario.timeline if e.shape not in SHAPES]
    problems += [f"log level {p.level!r}" for p in scenario.logs if p.level not in ("ERROR", "WARN", "INFO", "DEBUG")]
    for key in ("noise", "daily_amplitude"):
        value = getattr(scenario, key)
        if value is not None and not 0 <= value < 1:
            problems.append(f"{key} {value!r} is not in [0, 1)")
    if scenario.kubernetes is not None:
        problems += cluster_problems(scenario.kubernetes, {s.name: s.kind for s in scenario.services})
    problems += [
        f"runbook file {r.file!r} is not a plain *.md name"
        for r in scenario.runbooks
        if not re.fullmatch(r"[\w.-]+\.md", r.file)
    ]
    incident_time(scenario.incident, datetime(2026, 1, 2, 12, 0))
    if problems:
        raise ScenarioError(f"scenario {scenario.name}: " + "; ".join(problems))
