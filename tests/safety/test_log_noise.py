"""Third-party noise: Elasticsearch being down costs one log line per failure, not a traceback per retry."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from elastic_transport import ConnectionError as EsConnectionError

from bot.safety.logfilter import LibraryNoiseFilter
from bot.wiring.elastic import es_client


@pytest.fixture
def root_log() -> Iterator[tuple[io.StringIO, logging.Handler]]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    yield out, handler
    root.removeHandler(handler)
    root.setLevel(old_level)


def fail_three_searches() -> None:
    client = es_client("http://127.0.0.1:9", timeout_s=1.0, max_retries=3)
    for _ in range(3):
        with pytest.raises(EsConnectionError):
            client.search(index="logs-*", query={"match_all": {}})


def test_elasticsearch_down_logs_one_line_per_failure_without_tracebacks(
    root_log: tuple[io.StringIO, logging.Handler],
) -> None:
    out, handler = root_log
    fail_three_searches()
    unfiltered = out.getvalue()
    assert "Traceback" in unfiltered  # what the issue saw: a traceback per retry
    out.truncate(0)
    out.seek(0)
    handler.addFilter(LibraryNoiseFilter())
    fail_three_searches()
    lines = out.getvalue().splitlines()
    assert "Traceback" not in out.getvalue()
    assert 1 <= len(lines) <= 3 < len(unfiltered.splitlines())  # at most one line per failure


def test_errors_from_libraries_and_our_own_warnings_keep_their_tracebacks() -> None:
    noise = LibraryNoiseFilter()
    try:
        raise ValueError("x")
    except ValueError:
        import sys

        info = sys.exc_info()
    ours = logging.LogRecord("bot.engine.loop", logging.WARNING, __file__, 1, "tool failed", None, info)
    theirs = logging.LogRecord("elastic_transport.transport", logging.ERROR, __file__, 1, "gave up", None, info)
    assert noise.filter(ours) and ours.exc_info is info
    assert noise.filter(theirs) and theirs.exc_info is info
