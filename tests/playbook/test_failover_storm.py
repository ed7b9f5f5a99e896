"""A failover that became a retry storm: the failover line near the degraded services, the calls into the service that
failed over multiplying while users send no more, the callers' retry lines; weighed against a deploy that did not
change a retry setting, and left alone when one did. Over canned query_metrics and query_logs results."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from bot.playbook.families.failover import check_failover_storm, failed_over
from bot.playbook.findings import Findings, Suspect
from bot.playbook.probes import ProbeRun, Window
from tests.playbook.canned import change, deploy, metrics_toolbox, series, steady
from tools.analysis.configdiff import KeyChange
from tools.analysis.reasons import Reason
from tools.base import Toolbox, ToolResult, tool
from tools.logs.model import LogEntry
from tools.logs.render import render_logs
from tools.logs.summary import LogLine, LogSummary
from tools.metrics.series import MetricSeries
from tools.timerange import TimeWindow

NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
ONSET = NOW.replace(hour=15, minute=40)
TOPOLOGY = {"portal": ["api"], "api": ["cache", "db"], "billing": ["ledger"]}
SWITCH = "+switch-master cache-main 10.1.0.4 6379 10.1.0.9 6379 (cache-0 -> cache-1)"
RETRY = "GET session:42 timed out after 50ms; retrying immediately (attempt 3 of 10)"


def _line(minute: int, service: str, message: str, level: str = "WARN") -> LogLine:
    at = NOW.replace(hour=15, minute=minute)
    return LogLine(LogEntry(at, service, level, message, "client", f"{service}-7xqpn"))


class ScriptedLogs:
    """query_logs answering from a fixed set of lines: a service's, or every service's for "*"; records its calls."""

    def __init__(self, lines: Sequence[LogLine]) -> None:
        self.lines, self.asked = list(lines), list[str]()

    def query_logs(self, service: str, query: str = "", start: str = "", end: str = "", limit: int = 100) -> ToolResult:
        """Canned log lines, newest first, as the tool summarises them (tests only)."""
        self.asked.append(service)
        words = [w.rstrip("*").lower() for w in query.split(" OR ") if w]
        found = [
            line
            for line in self.lines
            if service in ("*", line.entry.service) and any(w in line.entry.message.lower() for w in words)
        ]
        found.sort(key=lambda line: line.entry.timestamp, reverse=True)
        window = TimeWindow(NOW - timedelta(hours=1), NOW)
        who = None if service == "*" else service
        summary = LogSummary(
            who, window, query, (), len(found), {"WARN": len(found)}, ("ERROR",), None, newest=tuple(found)
        )
        return ToolResult("ok" if found else "no_data", render_logs(summary), summary)


def _metrics(cache_surges: bool = True, users_surge: bool = False) -> dict[tuple[str, str], MetricSeries]:
    cache = (
        series(NOW, "cache", "qps", "req/s", (1700, 1800, 11000, 11000), changes=[change(NOW, "15:41", 1800, 11000)])
        if cache_surges
        else steady(NOW, "cache", "qps", "req/s", 1800)
    )
    portal = (
        series(NOW, "portal", "qps", "req/s", (140, 150, 600, 600), changes=[change(NOW, "15:41", 150, 600)])
        if users_surge
        else steady(NOW, "portal", "qps", "req/s", 150)
    )
    return {("cache", "qps"): cache, ("portal", "qps"): portal}


def _run(lines: Sequence[LogLine], **metrics: bool) -> tuple[ProbeRun, ScriptedLogs]:
    logs = ScriptedLogs(lines)
    canned = metrics_toolbox(_metrics(**metrics))
    tools = Toolbox([*canned, tool(logs.query_logs)])
    return ProbeRun(tools, None, Window("6h", "the last 6 hours", NOW)), logs


def _findings(*suspects: Suspect) -> Findings:
    findings = Findings(window_label="the last 6 hours", roles={"traffic": "qps"})
    findings.suspects = list(suspects)
    return findings


def _deploy_suspect(changes: Sequence[KeyChange] = ()) -> Suspect:
    suspect = Suspect("deploy api v5.0.3", "api", deploy=deploy("api", "v5.0.3", ONSET - timedelta(minutes=30)))
    suspect.key_changes = list(changes)
    suspect.add([Reason(2, "the service asked about"), Reason(4, "just before the onset")])
    return suspect


STORM = [_line(39, "cache", SWITCH), *(_line(m, "api", RETRY) for m in (41, 44, 50))]


def test_a_failover_with_retries_after_it_outranks_a_deploy_that_changed_no_retry_setting():
    run, _ = _run(STORM)
    findings = _findings(_deploy_suspect([KeyChange("i18n.locales", "[en]", "[en, es]", "config/app.yaml")]))
    check_failover_storm(run, findings, TOPOLOGY, "api", ONSET)
    top = findings.suspects[0]
    assert top.deploy is None and top.service == "cache", top.what
    assert "failover of cache" in top.what and "api's retries" in top.what and "no deploy caused this" in top.what
    assert top.score > findings.suspects[1].score
    assert any("stayed level" in why for why in top.why)


def test_retry_lines_after_a_failover_make_a_suspect_when_its_traffic_did_not_visibly_multiply():
    run, _ = _run(STORM, cache_surges=False)
    findings = _findings()
    check_failover_storm(run, findings, TOPOLOGY, "api", ONSET)
    assert [s.service for s in findings.suspects] == ["cache"]
    assert not any("stayed level" in why for why in findings.suspects[0].why)


def test_a_failover_with_no_retry_volume_after_it_is_no_suspect():
    run, _ = _run([_line(39, "cache", SWITCH)], cache_surges=False)
    findings = _findings()
    check_failover_storm(run, findings, TOPOLOGY, "api", ONSET)
    assert findings.suspects == []


def test_a_surge_that_users_sent_is_no_retry_storm():
    run, _ = _run([_line(39, "cache", SWITCH)], users_surge=True)
    findings = _findings()
    check_failover_storm(run, findings, TOPOLOGY, "api", ONSET)
    assert findings.suspects == []


def test_a_deploy_that_changed_a_retry_setting_keeps_the_blame_and_no_log_is_read():
    run, logs = _run(STORM)
    retries = KeyChange("redis.retry.max-attempts", "2", "10", "config/app.yaml")
    findings = _findings(_deploy_suspect([retries]))
    check_failover_storm(run, findings, TOPOLOGY, "api", ONSET)
    assert [s.deploy is not None for s in findings.suspects] == [True] and logs.asked == []


def test_a_failover_far_from_the_degraded_services_is_not_theirs():
    run, _ = _run([_line(39, "ledger", SWITCH), *STORM[1:]])
    findings = _findings()
    check_failover_storm(run, findings, TOPOLOGY, "api", ONSET)
    assert findings.suspects == []


def test_failover_lines_are_told_from_the_retries_they_cause():
    near = ["cache", "db"]
    assert failed_over(_line(39, "cache", SWITCH).entry, near) == "cache"
    assert failed_over(_line(39, "db", "promoted self to leader: db-1 is the new primary").entry, near) == "db"
    assert failed_over(_line(41, "cache", RETRY).entry, near) == ""
    assert failed_over(_line(39, "ledger", SWITCH).entry, near) == ""


def test_a_failover_logged_by_a_watcher_outside_the_topology_is_the_failover_of_the_service_it_names():
    switch = "+switch-master cache 10.1.0.4 6379 10.1.0.9 6379"
    assert failed_over(_line(39, "sentinel", switch).entry, ["api", "cache"]) == "cache"
    assert failed_over(_line(39, "sentinel", switch.replace("cache", "cache-eu")).entry, ["api", "cache"]) == ""
    run, _ = _run([_line(39, "sentinel", switch), *STORM[1:]])
    findings = _findings()
    check_failover_storm(run, findings, TOPOLOGY, "api", ONSET)
    assert [s.service for s in findings.suspects] == ["cache"] and "sentinel" in findings.suspects[0].what
