"""The compose stack's one-shot job: load a sandbox incident into Prometheus' volume and Elasticsearch.

It builds the scenario with opsbot's own sandbox code (OpenMetrics -> promtool TSDB blocks under
<dir>/data/prometheus/data, log documents and deploy events), bulk-loads the logs and deploy events into
Elasticsearch, and writes <dir>/opsbot.env (topology, metric catalogue, backends) that the opsbot service
sources at start. Data is relative to "now": `docker compose down -v && docker compose up` refreshes it.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from bot.config import default_metric_catalogue
from bot.wiring.elastic import es_client
from bot.sandbox.control import SandboxInfo, write_env_file
from bot.sandbox.data import build_sandbox
from bot.sandbox.esindex import ingest_elasticsearch
from bot.sandbox.scenario import load_scenario

log = logging.getLogger("sandbox_seed")


def wait_for_elasticsearch(url: str, timeout_s: float) -> None:
    """Compose's healthcheck gates this job, but a cluster can still be electing: retry for a while."""
    client = es_client(url, plain_json=True, timeout_s=5.0)
    deadline = time.monotonic() + timeout_s
    while not client.ping():
        if time.monotonic() > deadline:
            raise SystemExit(f"Elasticsearch at {url} did not answer within {timeout_s:.0f} s")
        time.sleep(2)


def seed(scenario_name: str, sandbox_dir: Path, es_url: str, prometheus_url: str) -> Path:
    """Build the data, load Elasticsearch, write opsbot.env; returns the env file's path."""
    data_dir = sandbox_dir / "data"
    shutil.rmtree(data_dir, ignore_errors=True)  # build_sandbox wants an empty folder
    data = build_sandbox(load_scenario(scenario_name), data_dir)
    counts = ingest_elasticsearch(es_client(es_url, plain_json=True), data)
    log.info("loaded %s into %s; Prometheus blocks in %s", counts, es_url, data.prometheus_data)
    info = SandboxInfo(
        scenario=scenario_name, now=data.now, incident_at=data.incident_at, prometheus_url=prometheus_url,
        prometheus_pid=0, logs_db=data.logs_db, git_repo=data.git_repo, topology=data.topology,
        env_path=sandbox_dir / "opsbot.env", data_end=data.data_end, es_url=es_url,
    )
    base = {name: t.model_dump() for name, t in default_metric_catalogue().items()}
    return write_env_file(info, base)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="hikari-pool")
    parser.add_argument("--dir", type=Path, default=Path("/sandbox"))
    parser.add_argument("--es-url", default="http://elasticsearch:9200")
    parser.add_argument("--prometheus-url", default="http://prometheus:9090")
    parser.add_argument("--wait-s", type=float, default=120.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    wait_for_elasticsearch(args.es_url, args.wait_s)
    env_path = seed(args.scenario, args.dir, args.es_url, args.prometheus_url)
    log.info("sandbox %s ready at %s (clock %s); settings in %s", args.scenario, args.dir,
             datetime.now(UTC).strftime("%H:%M UTC"), env_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
