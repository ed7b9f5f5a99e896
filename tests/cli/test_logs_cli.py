"""`opsbot logs ingest FILE`: a team's JSON lines into the SQLite store, through the configured field mapping."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.slack.intake.test_serve import OPSBOT
from tools.base import Toolbox, call_tool
from tools.logs.model import LogFields
from tools.logs.query import LogTools, SqliteLogs

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)
ECS = {
    "OPSBOT_LOGS__SERVICE_FIELD": "service.name",
    "OPSBOT_LOGS__LEVEL_FIELD": "log.level",
    "OPSBOT_LOGS__LOGGER_FIELD": "log.logger",
    "OPSBOT_LOGS__STACK_FIELD": "error.stack_trace",
}
POOL_ERROR = "java.sql.SQLTransientConnectionException"


def opsbot(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    env = {"OPSBOT_LOGS__SQLITE_PATH": str(tmp_path / "logs.db"), **env}
    return subprocess.run(
        [OPSBOT, *args], env=clean | env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )


def ecs_file(tmp_path: Path) -> Path:
    """Lines as ECS loggers (ecs-logging-java) write them: dotted keys, levels in the logger's case."""
    lines = []
    for minutes, level in ((5, "ERROR"), (6, "error"), (7, "INFO")):
        doc = {
            "@timestamp": (NOW - timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z"),
            "log.level": level,
            "service.name": "inventory",
            "log.logger": "com.zaxxer.hikari.pool.HikariPool",
            "message": "HikariPool-1 - Connection is not available, request timed out after 30000ms"
            if level != "INFO"
            else "GET /stock -> 200",
        }
        if level != "INFO":
            doc |= {"error.type": POOL_ERROR, "error.stack_trace": f"{POOL_ERROR}: HikariPool-1\n\tat x.y(Z.java:1)"}
        lines.append(json.dumps(doc))
    path = tmp_path / "inventory.jsonl"
    path.write_text("\n".join([*lines, "not json", ""]), encoding="utf-8")
    return path


def test_ecs_lines_load_through_the_ecs_mapping_and_search_in_any_case(tmp_path: Path) -> None:
    result = opsbot(tmp_path, "logs", "ingest", str(ecs_file(tmp_path)), **ECS)
    fields = LogFields(service="service.name", level="log.level", logger="log.logger", stack_trace="error.stack_trace")
    box = Toolbox(LogTools(SqliteLogs(tmp_path / "logs.db", fields), clock=lambda: NOW).specs())
    text = call_tool(box, "query_logs", {"service": "inventory", "level": "error"}).text

    assert result.returncode == 0, result.stderr
    assert "stored 3 of 4 lines" in result.stdout and "1 skipped" in result.stdout
    assert "services: inventory 3" in result.stdout and "levels as written: ERROR 1, error 1, INFO 1" in result.stdout
    assert "matched 2 lines · by level, before the level filter: ERROR 2 · INFO 1" in text
    assert f"by error type: {POOL_ERROR} 2" in text and "c.z.h.p.HikariPool" in text


def test_a_mapping_that_fits_no_line_stores_nothing_and_names_the_setting(tmp_path: Path) -> None:
    result = opsbot(tmp_path, "logs", "ingest", str(ecs_file(tmp_path)))  # the default, plain-JSON field names

    assert result.returncode == 2
    assert "logs.level_field = 'level': missing in 3 of 3 documents (did you mean 'log.level'?)" in result.stderr
    assert "logs.service_field = 'service': missing in 3 of 3 documents (did you mean 'service.name'?)" in result.stderr
    assert "nothing stored" in result.stderr and not (tmp_path / "logs.db").exists()


def test_open_telemetry_lines_with_epoch_nanoseconds_and_a_service_given(tmp_path: Path) -> None:
    stamp_ns = int((NOW - timedelta(minutes=3)).timestamp() * 1e9)
    line = {"timestamp": stamp_ns, "severity_text": "Error", "body": "payment declined", "attributes": {}}
    path = tmp_path / "otel.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    otel = {"OPSBOT_LOGS__TIMESTAMP_FIELD": "timestamp", "OPSBOT_LOGS__LEVEL_FIELD": "severity_text"}
    result = opsbot(
        tmp_path, "logs", "ingest", str(path), "--service", "payment", OPSBOT_LOGS__MESSAGE_FIELD="body", **otel
    )
    box = Toolbox(LogTools(SqliteLogs(tmp_path / "logs.db"), clock=lambda: NOW).specs())
    text = call_tool(box, "query_logs", {"service": "payment", "range": "10m"}).text

    assert result.returncode == 0, result.stderr
    assert "services: payment 1" in result.stdout
    assert "ERROR payment" in text and "payment declined" in text and "15:57:00" in text
