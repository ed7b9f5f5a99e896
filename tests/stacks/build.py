"""Build a stack into a folder (metrics backfilled for Prometheus, an osmem seed, a git repository) and start it.

<workdir>/metrics.om, <workdir>/prometheus/data   the metrics, as its services' instrumentation writes them
<workdir>/seed                                     the log indices with their mappings (osmem-server loads it)
<workdir>/deploys                                  the GitOps repository
Times follow the session's clock: the incident 90 minutes before it, metrics from four hours before the incident
to two hours after the clock (instant queries keep answering).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from bot.sandbox.backends import Proc, backfill, free_port, start_osmem, start_prometheus
from bot.sandbox.logdocs import log_docs
from bot.sandbox.scenario import Scenario, scenario_from_dict
from bot.sandbox.signals import ServiceSignals, signals_from_scenario
from tests.stacks.gitops import build_gitops_repo
from tests.stacks.logs import CONVENTIONS, indexed, write_seed
from tests.stacks.metrics import WRITERS, Families, pool_gauges
from tests.stacks.spec import StackSpec

LEAD_HOURS = 4
FUTURE_HOURS = 2


@dataclass(frozen=True)
class BuiltStack:
    spec: StackSpec
    scenario: Scenario
    now: datetime
    workdir: Path
    prometheus_data: Path
    seed: Path | None
    repo: Path | None
    commits: dict[str, str]  # a change's message -> its commit sha

    @property
    def incident_at(self) -> datetime:
        return self.scenario.incident_at(self.now)

    @property
    def question(self) -> str:
        return self.spec.question.format(at=f"{self.incident_at:%H:%M}")

    @property
    def log_indices(self) -> list[str]:
        return sorted(p.name.removesuffix(".ndjson") for p in self.seed.glob("*.ndjson")) if self.seed else []


def build_stack(spec: StackSpec, workdir: Path, now: datetime) -> BuiltStack:
    scenario = scenario_from_dict(spec.scenario)
    incident = scenario.incident_at(now)
    start = (incident - timedelta(hours=LEAD_HOURS)).replace(minute=0, second=0, microsecond=0)
    minutes = int((now + timedelta(hours=FUTURE_HOURS) - start).total_seconds() // 60)
    signals = signals_from_scenario(scenario, start, minutes, now)
    workdir.mkdir(parents=True, exist_ok=True)
    _write_metrics(spec, scenario, signals, incident, workdir / "metrics.om")
    backfill(workdir / "metrics.om", workdir / "prometheus" / "data")
    seed = None
    if spec.logs:
        docs = indexed(log_docs(scenario, signals, now), spec.logs)
        seed = write_seed(docs, {index: CONVENTIONS[spec.logs][1] for index in docs}, workdir / "seed")
    repo, commits = None, {}
    if spec.gitops:
        repo = workdir / "deploys"
        made = build_gitops_repo(repo, spec.gitops, spec.start, list(spec.changes), incident)
        commits = {change.message: sha for change, sha in made}
    return BuiltStack(spec, scenario, now, workdir, workdir / "prometheus" / "data", seed, repo, commits)


def _write_metrics(
    spec: StackSpec, scenario: Scenario, signals: list[ServiceSignals], incident: datetime, path: Path
) -> None:
    families = Families(signals[0].start)
    for sig in signals:
        style = spec.styles[sig.service]
        pool = None
        if style.pool_size:
            resize = next(
                (c for c in spec.changes if c.service == sig.service and c.env == "prod" and "pool" in c.updates), None
            )
            at = incident + timedelta(minutes=resize.minutes) if resize else None
            shrunk_at = int((at - sig.start).total_seconds() // 60) if at else sig.minutes
            shrunk_to = int(resize.updates["pool"]) if resize else style.pool_size
            pool = pool_gauges(sig, scenario.service(sig.service).p99_ms, style.pool_size, shrunk_to, shrunk_at)
        WRITERS[style.convention](families, sig, style, pool)
    families.write(path)


@dataclass(frozen=True)
class RunningStack:
    built: BuiltStack
    prometheus: Proc
    elasticsearch: Proc | None

    @property
    def prometheus_url(self) -> str:
        return self.prometheus.url

    @property
    def elasticsearch_url(self) -> str:
        return self.elasticsearch.url if self.elasticsearch else ""

    def stop(self) -> None:
        self.prometheus.stop()
        if self.elasticsearch is not None:
            self.elasticsearch.stop()


def start_stack(built: BuiltStack) -> RunningStack:
    """Its Prometheus (and osmem-server with its logs) on free loopback ports; stopped by PID with the session."""
    prometheus = start_prometheus(built.prometheus_data, free_port(), die_with_parent=True)
    es = start_osmem(free_port(), built.seed, die_with_parent=True) if built.seed else None
    return RunningStack(built, prometheus, es)


def discovered_config(stack: RunningStack, path: Path) -> Path:
    """The config file `opsbot init` would write for the stack's metrics (no subprocess), at `path`."""
    from bot import wiring
    from bot.cli.tomlfile import config_toml
    from bot.config import Settings

    options = wiring.StackOptions(stack.prometheus_url)
    findings = wiring.discover_stack(Settings(_env_file=None), options, stack.built.now)  # type: ignore[call-arg]
    path.write_text(config_toml(findings, ["written by the stack builder"]))
    return path
