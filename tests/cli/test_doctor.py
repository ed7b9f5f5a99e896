"""`opsbot doctor` and bad configuration: one line per problem naming the setting, never a traceback."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.config import DeploysSettings, LLMSettings, PrometheusSettings, Settings
from bot.wiring.doctor import (
    CheckResult,
    check_deploys,
    check_llm,
    check_prometheus,
    run_checks,
    settings_problems,
)
from tests.fakes.backends import RunningSandbox
from tests.fakes.llm import MODEL, ScriptedLLM
from tests.slack.intake.test_serve import OPSBOT
from tests.tools.metrics.scripted_prometheus import Reply, scripted_prometheus, self_signed_certificate, server_context


def opsbot(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    return subprocess.run([OPSBOT, *args], env=clean | env, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("command", [["serve"], ["diagnose", "why?"]])  # every command passes the same callback
@pytest.mark.parametrize(
    ("name", "value"), [("OPSBOT_AGENT__MAX_STEPS", "lots"), ("OPSBOT_PROMETHEUS__METRICS", '{"p99": {"promql": "up",')]
)
def test_a_bad_setting_prints_one_line_naming_it(command: list[str], name: str, value: str, tmp_path: Path) -> None:
    result = opsbot(*command, **{name: value})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0]


def test_problems_inside_a_json_setting_name_the_variable_and_the_place() -> None:
    env = {"OPSBOT_PROMETHEUS__METRICS": '{"x": {"promql": "up", "unit": "parsecs"}}'}
    try:
        Settings(_env_file=None, **{"prometheus": {"metrics": {"x": {"promql": "up", "unit": "parsecs"}}}})  # type: ignore[call-arg, arg-type]
    except ValueError as exc:
        [line] = settings_problems(exc, env)
    assert line.startswith("environment variable OPSBOT_PROMETHEUS__METRICS=") and "(at x.unit)" in line


class HtmlHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html>welcome to nginx</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def some_web_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), HtmlHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def with_prometheus(url: str) -> Settings:
    return Settings(_env_file=None, prometheus=PrometheusSettings(url=url))  # type: ignore[call-arg]


def test_a_prometheus_url_pointing_at_another_web_server_fails(some_web_server: str) -> None:
    result = check_prometheus(with_prometheus(some_web_server))
    assert result.level == "fail" and "OPSBOT_PROMETHEUS__URL" in result.line and "not JSON" in result.line


def test_real_prometheus_passes_and_nothing_listening_is_a_warning(sandbox: RunningSandbox) -> None:
    ok = check_prometheus(with_prometheus(sandbox.prometheus_url))
    assert ok.level == "ok" and ok.line.startswith("Prometheus ")
    assert check_prometheus(with_prometheus("http://127.0.0.1:9")).level == "warn"


def test_the_prometheus_check_asks_with_the_bearer_token_and_the_tls_setting(tmp_path: Path) -> None:
    buildinfo = Reply(body={"status": "success", "data": {"version": "3.1.0"}})
    with scripted_prometheus(buildinfo, tls=server_context(*self_signed_certificate(tmp_path))) as prometheus:
        p = PrometheusSettings(url=prometheus.url, bearer_token=SecretStr("t0ken"), verify_tls=False)
        result = check_prometheus(Settings(_env_file=None, prometheus=p))  # type: ignore[call-arg]
    assert (result.level, result.line) == ("ok", f"Prometheus 3.1.0 at {prometheus.url}")
    assert prometheus.seen[0].headers["Authorization"] == "Bearer t0ken"


def test_the_deploy_repo_must_be_a_git_repository(tmp_path: Path) -> None:
    def settings(path: Path) -> Settings:
        return Settings(_env_file=None, deploys=DeploysSettings(git_repo=path))  # type: ignore[call-arg]

    (tmp_path / "plain").mkdir()
    assert check_deploys(settings(tmp_path / "plain")).level == "fail"
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    assert check_deploys(settings(tmp_path / "repo")).level == "ok"


def test_the_llm_endpoint_must_list_the_configured_model(scripted_llm: ScriptedLLM) -> None:
    def settings(model: str) -> Settings:
        llm = LLMSettings(base_url=scripted_llm.base_url, api_key="test", model=model)  # type: ignore[arg-type]
        return Settings(_env_file=None, llm=llm)  # type: ignore[call-arg]

    assert check_llm(settings(MODEL)).level == "ok"
    wrong = check_llm(settings("gpt-9-imaginary"))
    assert wrong.level == "fail" and "gpt-9-imaginary" in wrong.line and "OPSBOT_LLM__MODEL" in wrong.line


def test_a_check_that_raises_is_reported_as_its_failure() -> None:
    def check_broken(settings: Settings) -> CheckResult:
        raise RuntimeError("boom")

    [result] = run_checks(Settings(_env_file=None), [check_broken])  # type: ignore[call-arg]
    assert result == CheckResult("broken", "fail", "the check itself failed: RuntimeError: boom")


def test_serve_refuses_to_start_on_a_failed_check(some_web_server: str, tmp_path: Path) -> None:
    result = opsbot(
        "serve",
        OPSBOT_PROMETHEUS__URL=some_web_server,
        OPSBOT_SERVER__PORT="9",
        OPSBOT_STORE__SQLITE_PATH=str(tmp_path / "t.db"),
    )
    assert result.returncode == 2
    assert "FAIL prometheus: OPSBOT_PROMETHEUS__URL=" in result.stderr and "Traceback" not in result.stderr
