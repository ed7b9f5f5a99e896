"""Every store test runs against both stores: SQLite in a temp file and Elasticsearch on osmem-server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.store.base import TraceStore
from bot.store.elastic import ElasticsearchTraceStore
from bot.store.sqlite import SqliteTraceStore
from bot.wiring.elastic import es_client


@pytest.fixture(params=["sqlite", "elasticsearch"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TraceStore]:
    if request.param == "sqlite":
        s: TraceStore = SqliteTraceStore(tmp_path / "traces.db")
    else:
        clone: Any = request.getfixturevalue("osmem_clone")
        s = ElasticsearchTraceStore(es_client(clone.url, plain_json=True), "opsbot-traces")
    yield s
    s.close()
