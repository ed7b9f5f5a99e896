"""Settings checked at start: `serve` stops on a URL, port or path it cannot use, naming the setting; a fleet on a
node's SQLite file is refused by doctor (and so by serve)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from bot.config import RedisSettings, ServerSettings, Settings, StoreSettings
from bot.wiring.doctor import default_checks, run_checks, settings_problems
from bot.wiring.startup import check_replicas, startup_problems
from tests.slack.intake.test_serve import OPSBOT


def opsbot(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    return subprocess.run(
        [OPSBOT, *args], env=clean | env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def settings(**sections: object) -> Settings:
    return Settings(_env_file=None, **sections)  # type: ignore[call-arg, arg-type]


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("OPSBOT_PROMETHEUS__URL", "htp//prometheus:9090", "must start with http:// or https://"),
        ("OPSBOT_ELASTICSEARCH__URL", "http://:9200", "no host"),
        ("OPSBOT_SLACK__API_BASE_URL", "https://slack.com:99999/api/", "not a URL"),
        ("OPSBOT_SERVER__PORT", "70000", "less than or equal to 65535"),
    ],
)
def test_a_url_or_port_that_cannot_work_stops_serve_with_a_line_naming_it(
    name: str, value: str, says: str, tmp_path: Path
) -> None:
    result = opsbot("serve", cwd=tmp_path, **{name: value})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert name in line and says in line


def test_a_bad_url_in_the_config_file_names_the_setting(tmp_path: Path) -> None:
    config = tmp_path / "opsbot.toml"
    config.write_text('[prometheus]\nurl = "htp//prometheus:9090"\n')
    result = opsbot("serve", cwd=tmp_path, OPSBOT_CONFIG_FILE=str(config))
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()  # named where it was set: the file, its section and key
    assert str(config) in line and "[prometheus] url" in line and "htp//prometheus:9090" in line


def test_urls_that_work_pass_and_empty_means_not_used() -> None:
    good = settings(
        prometheus={"url": "https://prometheus.monitoring:9090/prom"},
        elasticsearch={"url": ""},
        llm={"base_url": "http://localhost:11434/v1"},
    )
    assert good.prometheus.url.endswith("/prom") and good.elasticsearch.url == ""
    with pytest.raises(ValidationError) as caught:
        settings(loki={"url": "loki:3100"})
    [line] = settings_problems(caught.value, {})
    assert line.startswith("OPSBOT_LOKI__URL = 'loki:3100': ") and "http://" in line


def test_a_store_folder_that_cannot_be_created_and_a_taken_port_are_named(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        problems = startup_problems(
            settings(
                store=StoreSettings(sqlite_path=blocker / "traces.db"),
                server=ServerSettings(port=port),
                redis=RedisSettings(url=SecretStr("redis-host:6379")),
            )
        )
    assert [p.split(":", 1)[0].split("=")[0] for p in problems] == [
        "OPSBOT_STORE__SQLITE_PATH",
        "OPSBOT_REDIS__URL",
        "OPSBOT_SERVER__PORT",
    ]
    assert "cannot be created" in problems[0] and f"127.0.0.1:{port}" in problems[2]
    assert "redis-host" not in problems[1]  # a Redis URL may carry a password: never echoed


def test_serve_refuses_a_store_path_it_cannot_write(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = opsbot(
        "serve",
        cwd=tmp_path,
        OPSBOT_STORE__SQLITE_PATH=str(blocker / "traces.db"),
        OPSBOT_PROMETHEUS__URL="http://127.0.0.1:9",
        OPSBOT_DEPLOYS__GIT_REPO=str(tmp_path / "deploys"),
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "opsbot serve: not starting:" in result.stderr and f"OPSBOT_STORE__SQLITE_PATH={blocker}" in result.stderr


def test_more_than_one_replica_on_a_nodes_sqlite_file_is_refused_and_the_fix_is_named() -> None:
    fleet = {"server": ServerSettings(replicas=3)}
    [on_sqlite] = run_checks(settings(**fleet), [check_replicas])
    assert on_sqlite.level == "fail" and on_sqlite.line.startswith("OPSBOT_SERVER__REPLICAS=3: ")
    assert "set OPSBOT_STORE__BACKEND=elasticsearch" in on_sqlite.line and "OPSBOT_REDIS__URL" in on_sqlite.line
    shared = settings(
        **fleet,
        store=StoreSettings(backend="elasticsearch"),
        elasticsearch={"url": "http://es:9200"},
        redis=RedisSettings(url=SecretStr("redis://redis:6379/0")),
    )
    assert check_replicas(shared).level == "ok"
    assert check_replicas(settings()).level == "ok"  # one replica: SQLite is the right store
    assert check_replicas in default_checks()  # `opsbot doctor` runs it, and so does `serve` before it starts


def test_doctor_fails_a_fleet_on_sqlite_naming_the_setting_to_change(tmp_path: Path) -> None:
    result = opsbot(
        "doctor",
        cwd=tmp_path,
        OPSBOT_SERVER__REPLICAS="2",
        OPSBOT_STORE__SQLITE_PATH=str(tmp_path / "traces.db"),
        OPSBOT_PROMETHEUS__URL="http://127.0.0.1:9",
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.startswith("FAIL replicas")]
    assert line.startswith("FAIL replicas: OPSBOT_SERVER__REPLICAS=2: ")
    assert "set OPSBOT_STORE__BACKEND=elasticsearch" in line


def test_serve_refuses_a_fleet_on_sqlite(tmp_path: Path) -> None:
    result = opsbot(
        "serve",
        cwd=tmp_path,
        OPSBOT_SERVER__REPLICAS="2",
        OPSBOT_STORE__SQLITE_PATH=str(tmp_path / "traces.db"),
        OPSBOT_PROMETHEUS__URL="http://127.0.0.1:9",
    )
    assert result.returncode == 2
    assert "FAIL replicas: OPSBOT_SERVER__REPLICAS=2:" in result.stderr and "OPSBOT_STORE__BACKEND" in result.stderr
