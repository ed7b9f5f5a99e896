"""The compose stack's seed job, run for real: promtool blocks, logs and deploys in Elasticsearch (osmem),
and an opsbot.env that Settings reads back into a sandbox-pointed configuration."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bot.config import Settings
from bot.wiring.elastic import es_client

SEED_SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "sandbox_seed.py"


def seed_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sandbox_seed", SEED_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_seed_job_loads_the_sandbox_and_writes_settings(
    osmem_clone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.startswith(("OPSBOT_", "OPENAI_"))]:
        monkeypatch.delenv(key)  # the env file alone must decide; a developer's environment would override it
    env_path = seed_module().seed("hikari-pool", tmp_path, osmem_clone.url, "http://prometheus:9090")
    client = es_client(osmem_clone.url, plain_json=True)
    assert client.count(index="logs-sandbox")["count"] > 100
    assert client.count(index="deploys")["count"] >= 1
    assert any((tmp_path / "data" / "prometheus" / "data").glob("01*"))  # TSDB blocks for Prometheus' volume
    settings = Settings(_env_file=env_path)  # type: ignore[call-arg]
    assert settings.prometheus.url == "http://prometheus:9090"
    assert settings.elasticsearch.url == osmem_clone.url
    assert (settings.logs.backend, settings.deploys.source) == ("elasticsearch", "index")
    assert "order" in settings.topology
    assert {"p99_latency", "memory_usage"} <= set(settings.prometheus.metrics)
