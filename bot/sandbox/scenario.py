"""Incident scenarios: data files in bot/sandbox/scenarios/<name>.toml read into frozen dataclasses.

Every time in a scenario is relative: the incident time to the run clock ("yesterday 15:05", "today 09:30",
"-45m"), and everything else (effects, deploys, log patterns) in minutes relative to the incident. The same
file therefore gives the same story on any day. scenarios/README.md describes the format for authors.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from bot.sandbox.cluster import DEFAULT_NODES, Cluster, Node
from bot.sandbox.exporters.catalog import LABEL_KEYS, SIGNALS, carried_signals

METRICS = ("p99_ms", "qps", "error_ratio", "cpu_cores", "memory_mb")
Shape = Literal["step", "ramp", "recover", "sawtooth", "plateau", "periodic"]
SHAPES = ("step", "ramp", "recover", "sawtooth", "plateau", "periodic")
LOG_FORMATS = ("plain", "json", "logfmt")
_INCIDENT_RX = re.compile(r"^(?:(today|yesterday)\s+(\d{1,2}):(\d{2})|-(\d+)m)$")


class ScenarioError(ValueError):
    """A scenario file that does not describe a usable incident."""


@dataclass(frozen=True)
class Service:
    """One service's healthy baseline and its running version before the incident.

    `signals` holds the healthy levels of the opt-in series it carries (bot/sandbox/exporters/catalog.py), `labels`
    the names those series use (mountpoint, pool, queue ...). `per_pod` breaks its series down by pod, version,
    node, zone and namespace, and pins its log lines to those pods.
    """

    name: str
    p99_ms: float
    qps: float
    error_ratio: float = 0.001
    cpu_cores: float = 0.5
    memory_mb: float = 512.0
    version: str = "v1.0.0"
    kind: str = "service"  # service | gateway | database | cache | dns | external (a third party: no repo folder)
    downstream: tuple[str, ...] = ()
    signals: Mapping[str, float] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    runtime: str = ""  # "jvm" (Micrometer names) | "go" | "" (no runtime series)
    per_pod: bool = False
    namespace: str = ""  # its Kubernetes namespace ("" = the [kubernetes] block's)
    log_format: str = "plain"  # how its team writes log lines: plain | json | logfmt (the message carries the line)

    def baseline(self, metric: str) -> float:
        if metric in METRICS:
            return float(getattr(self, metric))
        if metric in self.signals:
            return float(self.signals[metric])
        return float(SIGNALS[metric].default or 0.0)

    def label(self, key: str) -> str:
        """A label value the service's opt-in series use; the defaults derive from its name."""
        value = self.labels.get(key, LABEL_KEYS[key])
        if value:
            return value
        return self.name.removesuffix("-db") if key == "database" else self.name


@dataclass(frozen=True)
class Effect:
    """From `at_minutes` (relative to the incident) `metric` of `service` moves to `to`.

    step: at once; ramp: linearly over ramp_minutes; recover: jumps to `to`, then returns linearly to the
    baseline over ramp_minutes (a cache warming up); sawtooth: climbs from baseline to `to` over
    ramp_minutes, then the pod is OOM-killed (restart counter +1) and it starts again; plateau: the metric keeps
    its own course but never exceeds `to` (a cap met by the daily peak); periodic: at `to` for for_minutes every
    every_minutes (a job that runs every hour).
    The effect ends at end_minutes (None = the scenario's resolved_minutes, or never). `on_version`, `on_node` and
    `on_zone` narrow it to the pods that run that version or sit on that node or zone (a per-pod service's).
    """

    service: str
    metric: str
    to: float
    at_minutes: int = 0
    shape: Shape = "step"
    ramp_minutes: int = 0
    end_minutes: int | None = None
    every_minutes: int = 0
    for_minutes: int = 1
    on_version: str = ""
    on_node: str = ""
    on_zone: str = ""

    @property
    def scoped(self) -> bool:
        return bool(self.on_version or self.on_node or self.on_zone)


@dataclass(frozen=True)
class FileChange:
    """A file under services/<service>/ whose content a deploy changes from `before` to `after`."""

    path: str
    before: str
    after: str


@dataclass(frozen=True)
class CodeCommit:
    """A commit of the service's application repository that the deploy's image carries (a code change)."""

    subject: str
    author: str = ""  # "" = the deploy's author
    files: tuple[str, ...] = ()  # paths it changes ("" = one source file named after the service)


@dataclass(frozen=True)
class Deploy:
    """A commit to the service's folder, tagged `<service>/<version>`. config_only: the image tag stays (only
    files change); pods: a canary, the new version runs on that many pods and the rest keep the old one;
    commits: the application's commits the new image carries, after the routine ones."""

    service: str
    version: str
    at_minutes: int
    author: str
    summary: str
    files: tuple[FileChange, ...] = ()
    red_herring: bool = False
    config_only: bool = False
    pods: int | None = None
    commits: tuple[CodeCommit, ...] = ()


@dataclass(frozen=True)
class LogPattern:
    """Log lines of one kind. `message`, `stack_trace` and `fields` may use $n, $ms, $id, $incident
    (string.Template).

    steady: the full rate for the whole window (otherwise thinned after its first hour); every_minutes/for_minutes:
    only in those windows (a cron job); fields: extra fields of each document (actor, job, statement), also
    written into a structured line; format: plain, json or logfmt ("" = the service's log_format); on_version,
    on_node, on_zone: only from those pods of a per-pod service.
    """

    service: str
    level: str
    logger: str
    message: str
    per_minute: float
    start_minutes: int = 0
    end_minutes: int | None = None
    stack_trace: str = ""
    red_herring: bool = False
    steady: bool = False
    every_minutes: int = 0
    for_minutes: int = 1
    fields: Mapping[str, str] = field(default_factory=dict)
    format: str = ""
    on_version: str = ""
    on_node: str = ""
    on_zone: str = ""


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
    must_not_name: tuple[str, ...] = ()  # decoys: an answer whose headline names one blames the wrong thing

    @property
    def topology(self) -> dict[str, list[str]]:
        return {s.name: list(s.downstream) for s in self.services}

    @property
    def red_herrings(self) -> tuple[Deploy | LogPattern, ...]:
        items: tuple[Deploy | LogPattern, ...] = (*self.deploys, *self.logs)
        return tuple(x for x in items if x.red_herring)

    def service(self, name: str) -> Service:
        return next(s for s in self.services if s.name == name)

    def carried(self, service: str) -> tuple[str, ...]:
        """The opt-in signals `service` carries: those it sets a level for and those an effect moves."""
        moved = [e.metric for e in self.timeline if e.service == service and e.metric in SIGNALS]
        return carried_signals(self.service(service).signals, moved)

    @property
    def nodes(self) -> tuple[Node, ...]:
        return self.kubernetes.nodes if self.kubernetes else DEFAULT_NODES

    @property
    def kube_namespaces(self) -> tuple[str, ...]:
        """Where the cluster's objects are: the block's namespace, the services' own, and "default" (node events)
        when a node goes NotReady, is drained or has events of its own."""
        if self.kubernetes is None:
            return ()
        found = [self.kubernetes.namespace, *(self.namespace_of(s.name) for s in self.services if s.kind != "external")]
        nodes_said = any(n.not_ready_minutes is not None or n.drain_minutes is not None for n in self.nodes)
        nodes_said = nodes_said or any(e.kind == "Node" for e in self.kubernetes.events)
        return tuple(dict.fromkeys([*found, *(["default"] if nodes_said else [])]))

    def namespace_of(self, service: str) -> str:
        """The service's Kubernetes namespace: its own, else the [kubernetes] block's, else "default"."""
        return self.service(service).namespace or (self.kubernetes.namespace if self.kubernetes else "default")

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
EXAMPLES = "examples"  # scenarios/examples/: the format's newer signals at work; not scored by the suite


def scenario_names(folder: str = "") -> list[str]:
    """Names of the bundled scenarios, sorted; folder="heldout" gives the held-out ones as "heldout/<name>"."""
    root = resources.files("bot.sandbox") / "scenarios"
    where = root / folder if folder else root
    prefix = f"{folder}/" if folder else ""
    if not where.is_dir():
        return []
    return sorted(prefix + p.name.removesuffix(".toml") for p in where.iterdir() if p.name.endswith(".toml"))


def load_scenario(ref: str) -> Scenario:
    """Read and validate a scenario: a bundled name, "heldout/<name>", or the path of a team's own .toml file."""
    if ref.endswith(".toml") and Path(ref).is_file():
        text = Path(ref).read_text(encoding="utf-8")
    elif ref in (known := scenario_names() + scenario_names(HELDOUT) + scenario_names(EXAMPLES)):
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
    """Build a Scenario from parsed TOML and check it (bot/sandbox/scenariofile.py)."""
    from bot.sandbox.scenariofile import scenario_from_table  # it builds the dataclasses above

    return scenario_from_table(data)
