from __future__ import annotations

from pathlib import Path
from typing import Any

from bot import wiring
from bot.config import ElasticsearchSettings, Settings, StoreSettings
from bot.store.elastic import ElasticsearchTraceStore
from bot.store.sqlite import SqliteTraceStore
from bot.wiring.elastic import es_client
from tests.store.known_traces import known_traces


def test_build_store_defaults_to_sqlite_at_the_configured_path(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, store=StoreSettings(sqlite_path=tmp_path / "t.db"))  # type: ignore[call-arg]
    store = wiring.build_store(settings)
    assert isinstance(store, SqliteTraceStore) and store.path == tmp_path / "t.db"
    store.close()


def test_build_store_uses_elasticsearch_when_configured(osmem_clone: Any) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        store=StoreSettings(backend="elasticsearch", index="ops-traces"),
        elasticsearch=ElasticsearchSettings(url=osmem_clone.url, plain_json=True),
    )
    store = wiring.build_store(settings)
    assert isinstance(store, ElasticsearchTraceStore) and store.index == "ops-traces"
    store.save(known_traces()[0])
    reopened = wiring.build_store(settings)  # a restart: same index, mapping kept, trace still there
    assert reopened.get("t1") is not None
    client = es_client(osmem_clone.url, plain_json=True)
    mapping = client.indices.get_mapping(index="ops-traces")["ops-traces"]["mappings"]
    assert mapping["dynamic"] == "strict" and mapping["properties"]["calls"]["type"] == "nested"
