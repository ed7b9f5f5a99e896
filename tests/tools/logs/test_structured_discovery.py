"""`opsbot init` finds the message key of structured (JSON, logfmt) lines and their fields; `opsbot doctor` checks a
configured key against the newest lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.fakes.loki import FakeLoki, Line
from tools.discovery import Finding
from tools.logs.checks import check_logs
from tools.logs.discovery import discover_log_lines, discover_loki_logs
from tools.logs.loki import LokiLogs
from tools.logs.model import LogFields
from tools.logs.query import SqliteLogs

KEY = "logs.line_message_key"


def json_documents(now: datetime) -> list[str]:
    """Documents whose message is itself a JSON line, as an app that logs JSON ships it through a collector."""
    docs = []
    for n in range(12):
        line = {"ts": now.isoformat(), "level": "error", "msg": "rate limit exceeded", "client": f"c-{n}"}
        docs.append({"@timestamp": (now - timedelta(minutes=n)).isoformat(), "service": "limiter", "level": "ERROR"})
        docs[-1]["message"] = json.dumps({**line, "memory_mb": 1843 + n})
    return [json.dumps(d) for d in docs]


def finding(found: list[Finding], setting: str = KEY) -> Finding:
    return next(f for f in found if f.setting == setting)


def test_init_finds_the_message_key_inside_json_lines_and_their_fields() -> None:
    found = finding(discover_log_lines(json_documents(datetime.now(UTC)), "limiter.jsonl"))
    assert found.value == "msg" and not found.problems
    assert found.evidence.startswith("12 of 12 messages of the limiter.jsonl are json lines; their message is in msg")
    assert "their other fields: client, memory_mb" in found.evidence


def test_init_reads_logfmt_lines_from_loki() -> None:
    now = datetime.now(UTC)
    lines = [
        Line(int((now - timedelta(minutes=m)).timestamp() * 1e9), (("service", "gateway"), ("level", "error")), text)
        for m, text in enumerate(
            [f'level=error msg="upstream timeout" upstream=auth elapsed_ms={5000 + m}' for m in range(5)]
        )
    ]
    fake = FakeLoki(lines)
    try:
        found = finding(discover_loki_logs(LokiLogs(fake.url)))
    finally:
        fake.stop()
    assert found.value == "msg" and "5 of 5 newest lines are logfmt lines" in found.evidence
    assert "upstream, elapsed_ms" in found.evidence


def test_plain_text_lines_need_no_message_key() -> None:
    lines = [json.dumps({"@timestamp": "2026-11-28T15:00:00Z", "service": "a", "level": "INFO", "message": "ok"})]
    found = finding(discover_log_lines(lines, "a.jsonl"))
    assert found.value == "" and "are plain text, not JSON or logfmt" in found.evidence and not found.problems


def test_doctor_checks_the_configured_message_key_against_the_newest_lines(tmp_path: Path) -> None:
    path = tmp_path / "logs.db"
    SqliteLogs(path).ingest_jsonl(json_documents(datetime.now(UTC)))
    right = finding(check_logs(SqliteLogs(path, LogFields(line_message="msg"))))
    assert right.value == "msg" and not right.problems and "12 hold msg" in right.evidence
    wrong = finding(check_logs(SqliteLogs(path, LogFields(line_message="msgs"))))
    assert wrong.problems == ("logs.line_message_key = 'msgs' is in none of them (did you mean 'msg'?)",)
