"""`opsbot init` then `opsbot doctor` on the metrics of a real stack, and the misconfigurations doctor must name."""

from __future__ import annotations

import os
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from bot import wiring
from bot.config import Settings
from tests.slack.intake.test_serve import OPSBOT
from tests.stacks.build import RunningStack


def opsbot(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    return subprocess.run(
        [OPSBOT, *args], env=clean | env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def shop(make_stack: Callable[[str], RunningStack]) -> RunningStack:
    return make_stack("shop")


@pytest.fixture(scope="module")
def written(shop: RunningStack, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("init")
    result = opsbot("init", "--prometheus", shop.prometheus_url, "--output", "opsbot.toml", cwd=folder)
    assert result.returncode == 0, result.stderr
    return folder / "opsbot.toml", result.stdout


def doctor_lines(config: Path) -> tuple[int, list[str]]:
    result = opsbot("doctor", cwd=config.parent, OPSBOT_CONFIG_FILE=str(config))
    assert "Traceback" not in result.stderr
    return result.returncode, (result.stdout + result.stderr).splitlines()


def test_init_prints_each_choice_with_its_evidence_and_writes_a_file_settings_load(written):
    config, printed = written
    assert "✓ prometheus.service_label = application\n    application: 3 services [order, payment, web]" in printed
    assert "app_kubernetes_io_name: 1 service [inventory]" in printed
    assert "✗ logs.backend: no --elasticsearch or --loki given: logs were not looked at" in printed
    assert "✗ topology: not discovered (nothing init reads says which service calls which)" in printed
    text = config.read_text()
    assert "# application: 3 services [order, payment, web] (Micrometer (Spring Boot));" in text
    data = tomllib.loads(text)
    assert data["prometheus"]["services"]["inventory"]["service_label"] == "app_kubernetes_io_name"
    settings = Settings(_env_file=None, config_file=config)  # type: ignore[call-arg]
    assert settings.prometheus.metrics["db_pool_pending"].role == "saturation"
    assert settings.prometheus.services["inventory"].metrics["error_rate"].promql.count('code=~"5.."') == 1


def test_every_query_init_wrote_returns_data_for_every_service(written, shop):
    config, _ = written
    settings = Settings(_env_file=None, config_file=config)  # type: ignore[call-arg]
    tools = wiring.build_metrics_tools(settings)
    assert tools.known_services() == ["inventory", "order", "payment", "web"]
    for service in tools.known_services():
        for metric in tools.catalogue:
            if (
                metric
                in settings.prometheus.services.get(service, settings.prometheus.services["inventory"]).not_measured
            ):
                continue
            assert tools.series(service, metric, "1h").summary.samples, (service, metric)


def test_doctor_passes_the_written_metric_settings(written):
    config, _ = written
    _, lines = doctor_lines(config)  # logs and deploys are not configured here: the end-to-end tests connect them
    assert not [line for line in lines if line.startswith("FAIL metrics")], lines
    [metrics] = [line for line in lines if line.startswith("OK   metrics:")]
    assert "4 of the 4 services Prometheus holds" in metrics and "inventory: p99_latency, qps, error_rate" in metrics


def broken(config: Path, old: str, new: str) -> Path:
    copy = config.with_name(f"broken-{abs(hash(new))}.toml")
    text = config.read_text()
    assert old in text
    copy.write_text(text.replace(old, new, 1))
    return copy


def test_a_misspelt_service_label_fails_doctor_naming_the_file_the_value_and_the_label_meant(written):
    config, _ = written
    bad = broken(config, "service_label = 'application'", "service_label = 'aplication'")
    code, lines = doctor_lines(bad)
    assert code == 1
    fail = [line for line in lines if line.startswith("FAIL metrics:")]
    assert fail[0] == (
        f"FAIL metrics: prometheus.service_label = 'aplication' (config file {bad} [prometheus] service_label): "
        "no series carries the label 'aplication' (did you mean 'application'?)"
    )


def test_a_status_label_the_service_does_not_carry_is_named_with_the_one_it_does(written):
    config, _ = written
    bad = broken(config, 'code=~"5.."', 'status=~"5.."')
    code, lines = doctor_lines(bad)
    assert code == 1
    [fail] = [line for line in lines if line.startswith("FAIL metrics:")]
    assert fail.startswith("FAIL metrics: prometheus.services.inventory.metrics.error_rate.promql = ")
    assert f"(config file {bad} [prometheus.services.inventory.metrics.error_rate] promql)" in fail
    assert fail.endswith("the label 'status' is not on inventory's http_requests_total series (did you mean 'code'?)")


def test_a_service_on_another_label_is_named_with_the_label_that_holds_it(written):
    config, _ = written
    bad = broken(config, "service_label = 'app_kubernetes_io_name'", "service_label = 'application'")
    code, lines = doctor_lines(bad)
    assert code == 1
    fail = [line for line in lines if line.startswith("FAIL metrics:")]
    assert any(
        line.endswith(
            "the label 'application' has no value 'inventory'; inventory's series carry app_kubernetes_io_name: "
            "set [prometheus.services.inventory] service_label = 'app_kubernetes_io_name'"
        )
        for line in fail
    ), fail


def test_a_dollar_one_template_is_checked_at_load_and_never_crashes(written):
    config, _ = written
    bad = broken(config, "[prometheus.metrics.qps]\n", "[prometheus.metrics.qps]\n")
    text = bad.read_text().replace(
        'sum(rate(http_server_requests_seconds_count{$label="$service"}[5m]))',
        'sum(label_replace(rate(http_server_requests_seconds_count{$label="$servce"}[5m]), "x", "$1", "uri", "(.*)"))',
        1,
    )
    bad.write_text(text)
    code, lines = doctor_lines(bad)
    assert code == 1
    fail = [line for line in lines if line.startswith("FAIL metrics: prometheus.metrics.qps.promql")]
    assert fail and fail[0].endswith(
        "unknown placeholder $servce (did you mean '$service'?); a template may use $label and $service"
    )


def test_toolsets_fails_the_metrics_toolset_on_a_broken_template(written):
    config, _ = written
    bad = broken(
        config,
        'sum(hikaricp_connections_pending{$label="$service"})',
        'sum(hikaricp_connections_pending{$lable="$service"})',
    )
    settings = Settings(_env_file=None, config_file=bad)  # type: ignore[call-arg]
    [metrics] = [s for s in wiring.toolset_statuses(settings) if s.name == "metrics"]
    assert metrics.state == "fail"
    assert metrics.detail.startswith("the catalogue's template db_pool_pending is broken: unknown placeholder $lable")


def test_init_writes_nothing_when_prometheus_cannot_be_inspected(tmp_path):
    from tests.fakes.faulty import closed_port_url

    url = closed_port_url()
    result = opsbot("init", "--prometheus", url, "--output", "opsbot.toml", cwd=tmp_path)
    assert result.returncode == 1 and not (tmp_path / "opsbot.toml").exists()
    assert f"✗ prometheus.url: Prometheus at {url} is unreachable" in result.stdout
    assert "was not written" in result.stderr and "Traceback" not in result.stderr


def test_a_matcher_value_no_series_holds_is_named_with_the_value_meant(written):
    config, _ = written
    bad = broken(config, 'status=~"5.."', 'status="5000"')
    code, lines = doctor_lines(bad)
    assert code == 1
    fail = [line for line in lines if line.startswith("FAIL metrics: prometheus.metrics.error_rate.promql")]
    assert fail and all(line.endswith("(did you mean '500'?)") for line in fail), lines
    expected = 'status="5000" matches none of order\'s http_server_requests_seconds_count status values (200, 500)'
    assert any(line.endswith(f"{expected} (did you mean '500'?)") for line in fail), fail


def test_a_matcher_value_that_matches_nothing_yet_is_not_a_typo(written):
    config, _ = written
    _, lines = doctor_lines(broken(config, 'status=~"5.."', 'status="503"'))  # no 503 so far: not a problem
    assert not [line for line in lines if line.startswith("FAIL metrics")], lines


def test_list_services_names_the_label_of_a_service_on_another_one(written):
    config, _ = written
    tools = wiring.build_metrics_tools(Settings(_env_file=None, config_file=config))  # type: ignore[call-arg]
    header = tools.list_services().text.splitlines()[0]
    assert header.startswith("4 services (label 'application'; inventory on 'app_kubernetes_io_name');"), header
