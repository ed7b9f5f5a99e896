"""Real local backends for tests: Prometheus (Debian package, backfilled), SQLite logs, git, osmem.

Fixtures (session scope):
    sandbox        the default scenario (hikari-pool), Prometheus on a free port
    make_sandbox   factory: make_sandbox("cpu-saturation") -> RunningSandbox, one Prometheus per scenario (and
                   its Kubernetes API stand-in, in-process, when it has a cluster), started lazily and cached
    es_sandbox     osmem-server with the default scenario's logs (`logs-sandbox`) and deploy events (`deploys`)
                   loaded -> its URL (str)

Servers die with the test session even when it is killed (PR_SET_PDEATHSIG), and are stopped by PID at its
end otherwise. `now` is the wall clock at the start of the session, truncated to the minute, and fixed for it: every
relative time in a scenario ("yesterday 15:05") resolves against it, so tests should compute times from
`sandbox.now` / `sandbox.incident_at`, never from a second reading of the clock.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.sandbox.backends import Proc, free_port, start_osmem, start_prometheus
from bot.sandbox.data import SandboxData, build_sandbox
from bot.sandbox.esindex import write_osmem_seed
from bot.sandbox.scenario import Scenario, load_scenario
from bot.sandbox.standins.kubeapi import FakeKubeAPI

DEFAULT_SCENARIO = "hikari-pool"
MIDNIGHT_GUARD = timedelta(minutes=15)  # the full suite runs ~9 min on a quiet 2-core machine


@dataclass(frozen=True)
class RunningSandbox:
    """A built scenario with its Prometheus running."""

    data: SandboxData
    prometheus: Proc
    kube: FakeKubeAPI | None = None
    kubeconfig: Path | None = None

    @property
    def kube_namespace(self) -> str:
        return self.data.scenario.kubernetes.namespace if self.data.scenario.kubernetes else ""

    @property
    def runbooks_dir(self) -> Path:
        return self.data.runbooks_dir

    def stop(self) -> None:
        self.prometheus.stop()
        if self.kube is not None:
            self.kube.stop()

    @property
    def prometheus_url(self) -> str:
        return self.prometheus.url

    @property
    def logs_db(self) -> Path:
        return self.data.logs_db

    @property
    def logs_jsonl(self) -> Path:
        return self.data.logs_jsonl

    @property
    def git_repo(self) -> Path:
        return self.data.git_repo

    @property
    def topology(self) -> dict[str, list[str]]:
        return self.data.topology

    @property
    def scenario(self) -> Scenario:
        return self.data.scenario

    @property
    def now(self) -> datetime:
        return self.data.now

    @property
    def incident_at(self) -> datetime:
        return self.data.incident_at


def start_sandbox(name: str, workdir: Path, now: datetime) -> RunningSandbox:
    """Build `name` under workdir and start its Prometheus on a free port (retrying once on a port race)."""
    data = build_sandbox(load_scenario(name), workdir, now)
    try:
        proc = start_prometheus(data.prometheus_data, free_port(), die_with_parent=True)
    except RuntimeError:
        proc = start_prometheus(data.prometheus_data, free_port(), die_with_parent=True)
    if data.cluster_json is None:
        return RunningSandbox(data, proc)
    kube = FakeKubeAPI.from_file(data.cluster_json)
    return RunningSandbox(data, proc, kube, kube.write_kubeconfig(workdir / "kubeconfig"))


def run_clock_at(hour: int, minute: int) -> datetime:
    """The latest UTC hour:minute not in the future, as `opsbot eval --at HH:MM` reads it (a sandbox holds data
    only up to its clock): a test pins a run clock that once failed with it, so that case runs on every run."""
    now = datetime.now(UTC)
    at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return at if at <= now else at - timedelta(days=1)


@pytest.fixture(scope="session")
def sandbox_now() -> datetime:
    """The session's run clock. Scenarios say "yesterday 15:05", and the bot reads "yesterday" from the wall clock: a
    sandbox built just before midnight UTC and asked just after it is a day off. So a session whose sandboxes would
    be built within MIDNIGHT_GUARD of midnight (longer than a full run of the suite) first waits for midnight."""
    now = datetime.now(UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    if midnight - now < MIDNIGHT_GUARD:
        wait_s = (midnight - now).total_seconds() + 1
        print(f"\nsandbox: waiting {wait_s:.0f} s for midnight UTC before building sandboxes", file=sys.__stderr__)
        time.sleep(wait_s)
        now = datetime.now(UTC)
    return now.replace(second=0, microsecond=0)


@pytest.fixture(scope="session")
def make_sandbox(
    tmp_path_factory: pytest.TempPathFactory, sandbox_now: datetime
) -> Iterator[Callable[[str], RunningSandbox]]:
    running: dict[str, RunningSandbox] = {}

    def make(name: str) -> RunningSandbox:
        if name not in running:
            folder = tmp_path_factory.mktemp(f"sandbox-{name.replace('/', '-')}")
            running[name] = start_sandbox(name, folder, sandbox_now)
        return running[name]

    yield make
    for box in running.values():
        box.stop()


@pytest.fixture(scope="session")
def sandbox(make_sandbox: Callable[[str], RunningSandbox]) -> RunningSandbox:
    return make_sandbox(DEFAULT_SCENARIO)


@pytest.fixture(scope="session")
def es_sandbox(sandbox: RunningSandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    seed = write_osmem_seed(sandbox.data, tmp_path_factory.mktemp("osmem") / "seed")
    proc = start_osmem(free_port(), seed, die_with_parent=True)
    yield proc.url
    proc.stop()
