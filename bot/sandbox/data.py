"""Build every data set of a scenario in one folder: OpenMetrics + TSDB blocks, log documents, a deploy repo.

<workdir>/metrics.om        OpenMetrics text (kept for inspection)
<workdir>/prometheus/data   TSDB blocks written by promtool, served by start_prometheus
<workdir>/logs.jsonl        log documents; <workdir>/logs.db the SQLite FTS5 store built from them
<workdir>/deploys           the git deploy repository (runbooks in deploys/runbooks); deploys.jsonl the same
                            deploys as ES events
<workdir>/cluster.json      the Kubernetes API objects, when the scenario has a [kubernetes] block
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.sandbox.apprepo import app_repo_path, build_app_repo
from bot.sandbox.backends import backfill
from bot.sandbox.cluster.objects import write_cluster
from bot.sandbox.deployrepo import DeployRecord, build_deploy_repo
from bot.sandbox.logdocs import iso_z, log_docs, write_jsonl
from bot.sandbox.openmetrics import write_openmetrics
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals, signals_from_scenario
from tools.logs.query import SqliteLogs

log = logging.getLogger(__name__)

HISTORY_HOURS = 26  # at least this much before now, and at least LEAD_HOURS before the incident
LEAD_HOURS = 4  # ... and before the earliest timeline effect: a change made hours before its symptom is in the data
FUTURE_HOURS = 2  # samples past "now" keep instant queries answering (Prometheus' 5-minute staleness)


@dataclass(frozen=True)
class SandboxData:
    """Where a built scenario's data lives, and the clock it was built for."""

    scenario: Scenario
    now: datetime
    workdir: Path
    data_start: datetime
    data_end: datetime
    openmetrics_path: Path
    prometheus_data: Path
    logs_jsonl: Path
    logs_db: Path
    git_repo: Path
    deploys_jsonl: Path
    deploys: tuple[DeployRecord, ...]
    timings_s: dict[str, float] = field(default_factory=dict)
    cluster_json: Path | None = None  # FakeKubeAPI.from_file reads it

    @property
    def runbooks_dir(self) -> Path:
        return self.git_repo / "runbooks"

    @property
    def incident_at(self) -> datetime:
        return self.scenario.incident_at(self.now)

    @property
    def topology(self) -> dict[str, list[str]]:
        return self.scenario.topology


def data_window(scenario: Scenario, now: datetime) -> tuple[datetime, datetime]:
    """[start, end) of the generated metrics: whole hours, from before the incident and its earliest effect to a
    little after now."""
    incident = scenario.incident_at(now)
    earliest = incident + timedelta(minutes=min([0, *(effect.at_minutes for effect in scenario.timeline)]))
    start = min(now - timedelta(hours=HISTORY_HOURS), earliest - timedelta(hours=LEAD_HOURS))
    end = now + timedelta(hours=FUTURE_HOURS)
    return start.replace(minute=0, second=0, microsecond=0), end.replace(second=0, microsecond=0)


def build_sandbox(scenario: Scenario, workdir: Path, now: datetime | None = None) -> SandboxData:
    """Generate and load every data set of `scenario` into `workdir` (created; must be empty or absent)."""
    now = (now or datetime.now(UTC)).astimezone(UTC).replace(second=0, microsecond=0)
    if workdir.exists() and any(workdir.iterdir()):
        # promtool would merge new blocks into old ones and git would refuse the repo: never half-overwrite
        raise FileExistsError(f"{workdir} is not empty; build a sandbox into a fresh folder")
    workdir.mkdir(parents=True, exist_ok=True)
    start, end = data_window(scenario, now)
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    signals = signals_from_scenario(scenario, start, int((end - start).total_seconds() // 60), now)
    om_path = workdir / "metrics.om"
    write_openmetrics(collected(scenario, signals, now), om_path, scenario)
    docs = log_docs(scenario, signals, now)
    write_jsonl(docs, workdir / "logs.jsonl")
    timings["generate"] = time.perf_counter() - clock
    clock = time.perf_counter()
    backfill(om_path, workdir / "prometheus" / "data")
    timings["backfill"] = time.perf_counter() - clock
    clock = time.perf_counter()
    records = build_deploy_repo(scenario, workdir / "deploys", now)
    build_app_repo(scenario, app_repo_path(workdir / "deploys"), now)
    write_jsonl([deploy_event(r) for r in records], workdir / "deploys.jsonl")
    cluster = write_cluster(scenario, signals, records, now, workdir / "cluster.json") if scenario.kubernetes else None
    timings["git"] = time.perf_counter() - clock
    clock = time.perf_counter()
    ingest_sqlite(workdir / "logs.jsonl", workdir / "logs.db")
    timings["sqlite"] = time.perf_counter() - clock
    log.info(
        "sandbox %s built in %s: %d log docs, %d deploys; timings %s",
        scenario.name,
        workdir,
        len(docs),
        len(records),
        {k: round(v, 2) for k, v in timings.items()},
    )
    return SandboxData(
        scenario=scenario,
        now=now,
        workdir=workdir,
        data_start=start,
        data_end=end,
        openmetrics_path=om_path,
        prometheus_data=workdir / "prometheus" / "data",
        logs_jsonl=workdir / "logs.jsonl",
        logs_db=workdir / "logs.db",
        git_repo=workdir / "deploys",
        deploys_jsonl=workdir / "deploys.jsonl",
        deploys=tuple(records),
        timings_s=timings,
        cluster_json=cluster,
    )


def collected(scenario: Scenario, signals: list[ServiceSignals], now: datetime) -> list[ServiceSignals]:
    """What Prometheus holds: every signal, or none from the scenario's collection gap on (the logs go on)."""
    if scenario.collection_gap_minutes is None:
        return signals
    gap_at = scenario.incident_at(now) + timedelta(minutes=scenario.collection_gap_minutes)
    lost = set(scenario.collection_gap_services) or {sig.service for sig in signals}
    return [sig.until(gap_at) if sig.service in lost else sig for sig in signals]


def deploy_event(record: DeployRecord) -> dict[str, Any]:
    """A deploy as a document of the ES `deploys` index (contract fields only)."""
    event = asdict(record)
    event.pop("red_herring")
    event.pop("image_version")
    event["@timestamp"] = iso_z(event.pop("at"))
    return event


def ingest_sqlite(jsonl: Path, db: Path) -> None:
    """Load the log documents into the SQLite FTS5 store that tools/logs/query.py reads."""
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)
    SqliteLogs(db).ingest_jsonl(jsonl)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]
