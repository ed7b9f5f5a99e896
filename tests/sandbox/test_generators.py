"""Generated data is valid: OpenMetrics for promtool, log documents per contract, a real git deploy repo."""

from __future__ import annotations

import itertools
import math
import re
import subprocess
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.sandbox.data import build_sandbox, data_window, read_jsonl
from bot.sandbox.deployrepo import build_deploy_repo, previous_version
from bot.sandbox.logdocs import log_docs
from bot.sandbox.openmetrics import BUCKETS_S, latency_cdf, median_s_from_p99_ms
from bot.sandbox.scenario import HELDOUT, load_scenario, scenario_names
from bot.sandbox.signals import signals_from_scenario

SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} (\S+) (\d+)$")
NOW = datetime(2026, 11, 29, 16, 11, tzinfo=UTC)


@pytest.fixture(scope="module")
def om_series(sandbox):
    return _series(sandbox.data.openmetrics_path)


def _series(path):
    series = defaultdict(list)
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        name, labels, value, ts = match.groups()
        series[(name, labels)].append((int(ts), float(value)))
    return series


def test_openmetrics_ends_with_eof_and_uses_second_timestamps(sandbox):
    text = sandbox.data.openmetrics_path.read_text()
    assert text.endswith("# EOF\n")
    first_ts = int(text.split("\n", 2)[1].rsplit(" ", 1)[1])
    assert abs(first_ts - sandbox.data.data_start.timestamp()) < 120  # seconds, not milliseconds


def test_counters_never_decrease_and_timestamps_increase(om_series):
    for (name, labels), points in om_series.items():
        if name.endswith(("_total", "_bucket", "_count", "_sum")):
            values = [v for _, v in points]
            assert all(b >= a for a, b in itertools.pairwise(values)), f"{name}{{{labels}}} decreases"
        stamps = [t for t, _ in points]
        assert all(b - a == 60 for a, b in itertools.pairwise(stamps)), f"{name}{{{labels}}} gaps"


def test_histogram_buckets_are_cumulative_over_le(om_series):
    buckets = {
        labels: pts
        for (name, labels), pts in om_series.items()
        if name == "http_request_duration_seconds_bucket" and 'service="order"' in labels
    }
    order = sorted(buckets, key=lambda labels: float(labels.rsplit('le="', 1)[1].rstrip('"')))
    last_values = [buckets[labels][-1][1] for labels in order]
    assert last_values == sorted(last_values)
    assert order[-1].endswith('le="+Inf"')


def _p99_read_ms(p99_ms: float) -> float:
    """What histogram_quantile(0.99, ...) reads from the generated buckets: the bound below the 99th rank, plus
    the rank's linear share of the bucket that holds it (Prometheus' rule)."""
    median_s = median_s_from_p99_ms(p99_ms)
    below_s, below_share = 0.0, 0.0
    for bound_s in BUCKETS_S:
        share = latency_cdf(bound_s, median_s)
        if share >= 0.99:
            return 1000 * (below_s + (bound_s - below_s) * (0.99 - below_share) / (share - below_share))
        below_s, below_share = bound_s, share
    return 1000 * BUCKETS_S[-1]


def test_every_p99_a_scenario_sets_reads_back_within_10_percent_through_the_buckets():
    # a database's 12 ms p99 once read 18 ms (nothing between 10 and 25 ms), and swung with its noise at a bound
    p99s = {
        value
        for name in scenario_names() + scenario_names(HELDOUT)
        for scenario in [load_scenario(name)]
        for value in [
            *(svc.baseline("p99_ms") for svc in scenario.services),
            *(e.to for e in scenario.timeline if e.metric == "p99_ms"),
        ]
    }
    misread = {p: round(_p99_read_ms(p), 1) for p in sorted(p99s) if abs(_p99_read_ms(p) / p - 1) > 0.1}
    assert len(p99s) > 20 and min(p99s) <= 2 and not misread, misread


def test_data_covers_the_incident_and_runs_past_now():
    for name in scenario_names():
        scenario = load_scenario(name)
        start, end = data_window(scenario, NOW)
        assert start <= scenario.incident_at(NOW) - timedelta(hours=4)
        assert end >= NOW + timedelta(hours=1)


@pytest.mark.parametrize("name", scenario_names())
def test_log_documents_follow_the_contract_and_stay_small(name):
    scenario = load_scenario(name)
    start, end = data_window(scenario, NOW)
    minutes = int((end - start).total_seconds() // 60)
    signals = signals_from_scenario(scenario, start, minutes, NOW)
    docs = log_docs(scenario, signals, NOW)
    # the generator's own lines (requests, queries, the symptom's errors) stay small; the lines a scenario asks for
    # in [[logs]] are its author's, at most per_minute over the whole data window each
    background = log_docs(replace(scenario, logs=()), signals, NOW)
    assert 300 < len(background) < 5000
    assert len(docs) - len(background) <= sum(math.ceil(p.per_minute * minutes) for p in scenario.logs)
    assert {"@timestamp", "service", "level", "message", "logger", "host", "trace_id"} <= set(docs[0])
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", d["@timestamp"]) for d in docs)
    assert docs == sorted(docs, key=lambda d: d["@timestamp"])
    assert max(d["@timestamp"] for d in docs) < NOW.strftime("%Y-%m-%dT%H:%M:%S.000Z")  # no logs from the future
    assert {d["level"] for d in docs} <= {"ERROR", "WARN", "INFO", "DEBUG"}


def test_default_logs_show_pool_timeouts_with_stack_traces_after_the_incident(sandbox):
    docs = read_jsonl(sandbox.logs_jsonl)
    incident = sandbox.incident_at.strftime("%Y-%m-%dT%H:%M")
    timeouts = [d for d in docs if "Connection is not available" in d["message"]]
    assert len(timeouts) > 100
    assert min(d["@timestamp"] for d in timeouts) >= incident
    assert all("SQLTransientConnectionException" in d["stack_trace"] for d in timeouts)


def test_sqlite_log_store_is_built(sandbox):
    from tools.logs.query import SqliteLogs

    assert "order" in SqliteLogs(sandbox.logs_db).services()


def test_previous_version_steps_back():
    assert [previous_version(v) for v in ("v2.8.1", "v2.8.0", "v3.0.0")] == ["v2.8.0", "v2.7.3", "v2.9.0"]


def test_deploy_repo_builds_without_a_global_git_identity(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    records = build_deploy_repo(load_scenario("slow-query-migration"), tmp_path / "repo", NOW)
    migration = next(r for r in records if r.version == "v5.4.0")
    assert migration.previous_version == "v5.3.2" and migration.author == "priya.n"
    assert "+DROP TABLE reservations;" in migration.diff
    assert all(r.previous_version for r in records if r.version in ("v5.4.0", "v5.3.2"))


def test_git_log_window_finds_the_deploy_by_committer_date(sandbox):
    since = (sandbox.incident_at - timedelta(minutes=10)).isoformat()
    until = sandbox.incident_at.isoformat()
    out = subprocess.run(
        [
            "git",
            "-C",
            str(sandbox.git_repo),
            "log",
            f"--since={since}",
            f"--until={until}",
            "--format=%s|%an",
            "--",
            "services/order",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == "order: Raise Hikari pool size for the checkout peak (v2.8.1)|li.wei"


def test_every_deploy_tag_is_annotated_with_summary_and_author(sandbox):
    message = subprocess.run(
        ["git", "-C", str(sandbox.git_repo), "tag", "-l", "--format=%(objecttype) %(contents)", "order/v2.8.1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert message.startswith("tag Raise Hikari pool size for the checkout peak")
    assert "author: li.wei" in message


def test_deploy_events_match_the_repo(sandbox):
    events = read_jsonl(sandbox.data.deploys_jsonl)
    event = next(e for e in events if e["version"] == "v2.8.1")
    head = subprocess.run(
        ["git", "-C", str(sandbox.git_repo), "rev-parse", "order/v2.8.1^{commit}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert event["commit"] == head
    assert event["@timestamp"] == sandbox.incident_at.strftime("%Y-%m-%dT15:02:00.000Z")
    assert set(event) == {"@timestamp", "service", "version", "previous_version", "author", "commit", "summary", "diff"}


def test_building_into_a_used_folder_is_refused(sandbox):
    with pytest.raises(FileExistsError, match="not empty"):
        build_sandbox(sandbox.scenario, sandbox.data.workdir, sandbox.now)
