"""A latency histogram that stops at 1 s, defaults the stack does not fill, and series init cannot place: the
answers and doctor say so instead of reading "no change" (tests/stacks/plain.py builds the stack)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import wiring
from bot.cli.tomlfile import config_toml
from bot.config import Settings
from bot.wiring.doctor import run_checks
from bot.wiring.meaning import check_metrics_meaning
from tests.stacks.test_metrics_side import opsbot
from tools.metrics.query import MetricsTools

CAPPED = "p99 >= 1,000 ms (the histogram's top finite bucket is 1 s; real latency may be higher)"


@pytest.fixture(scope="module")
def config(plain_stack: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file `opsbot init` writes for the stack (its findings, written as init writes them)."""
    findings = wiring.discover_stack(Settings(_env_file=None), wiring.StackOptions(plain_stack))  # type: ignore[call-arg]
    path = tmp_path_factory.mktemp("plain") / "opsbot.toml"
    path.write_text(config_toml(findings, ["written for the plain stack"]))
    return path


@pytest.fixture(scope="module")
def settings(config: Path) -> Settings:
    return Settings(_env_file=None, config_file=config)  # type: ignore[call-arg]


@pytest.fixture(scope="module")
def metrics(settings: Settings) -> MetricsTools:
    return wiring.build_metrics_tools(settings)


def test_a_p99_that_climbed_past_the_top_bucket_reads_as_a_floor(metrics):
    result = metrics.query_metrics("checkout-api", "p99_latency", "3h")
    assert f"capped: {CAPPED}" in result.text, result.text
    assert result.data.ceiling is not None and result.data.ceiling.bucket == "1 s"


def test_a_p99_flat_at_the_top_bucket_is_never_plain_no_change(metrics):
    text = metrics.query_metrics("search", "p99_latency", "3h").text
    assert f"capped: {CAPPED}" in text, text
    assert "change: none detected (no level shift, spike, trend or sawtooth; capped: a rise above" in text, text


def test_a_p99_inside_the_buckets_reads_as_it_is(metrics):
    result = metrics.query_metrics("cart", "p99_latency", "3h")
    assert result.status == "ok" and "capped" not in result.text and result.data.ceiling is None, result.text


def test_doctor_warns_of_a_histogram_whose_top_bucket_caps_the_p99(settings):
    lines = [str(r) for r in check_metrics_meaning(settings)]
    capped = [line for line in lines if line.startswith("WARN") and "top finite bucket" in line]
    assert any(
        "prometheus.metrics.p99_latency.promql" in line
        and "checkout-api:" in line
        and 'http_request_duration_seconds_bucket observations lie above its top finite bucket le="1.0" (1 s)' in line
        and "add buckets above 1 s" in line
        for line in capped
    ), lines
    assert not any("cart:" in line for line in capped), capped
    assert not any(line.startswith("FAIL") for line in lines), lines


def test_the_playbook_answer_carries_the_cap(settings):
    from bot.engine.types import Question

    playbook = wiring.build_playbook(settings)
    trace = playbook(Question("is search slow?"), wiring.build_toolbox(settings))
    headline = trace.answer.split("Evidence:")[0]
    assert "No incident found" not in headline and f"p99_latency: {CAPPED}" in headline, trace.answer


def test_run_checks_survives_the_plain_stack(settings):
    assert run_checks(settings, [check_metrics_meaning])


@pytest.fixture(scope="module")
def init_run(plain_stack: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """`opsbot init` as a user runs it: what it printed, and the file it wrote."""
    folder = tmp_path_factory.mktemp("plain-init")
    result = opsbot("init", "--prometheus", plain_stack, "--output", "opsbot.toml", cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout, (folder / "opsbot.toml").read_text()


def test_init_lists_the_series_it_saw_and_did_not_use_with_how_to_read_each(init_run):
    printed, written = init_run
    assert "? prometheus.metrics: seen, not used" in printed, printed
    assert "# Seen, not used (each line says how to read it: a catalogue entry and its role):" in written, written
    for text in (printed, written):
        assert (
            "shopfront_http_requests_total: a request counter with a status label, only checkout-api's series carry "
            "it; to read it add [prometheus.services.checkout-api.metrics.<name>] "
            "promql = 'sum(rate(shopfront_http_requests_total{$label=\"$service\"}[5m]))'"
        ) in text
        assert "its code=~\"5..\" share as role 'errors'" in text
        assert "checkout_db_pool_active_connections: a pool, queue or lag gauge, only checkout-api's" in text
        assert "role = 'saturation'" in text
        assert "kafka_consumergroup_lag: a pool, queue or lag gauge, its series carry no 'service' label" in text
        assert "[prometheus.services.<service>.metrics.<name>]" in text


def test_init_reads_a_family_as_its_type_says_a_counter_with_rate_a_gauge_as_it_is(init_run):
    _, written = init_run
    [wait] = [line for line in written.splitlines() if "checkout_db_pool_wait_total:" in line]
    assert "a pool, queue or lag counter" in wait and "sum(rate(checkout_db_pool_wait_total{" in wait, wait
    assert "max(checkout_db_pool_wait_total" not in wait, wait
    [inflight] = [line for line in written.splitlines() if "shopfront_inflight_requests:" in line]
    assert "a request gauge (not a counter)" in inflight and "max(shopfront_inflight_requests{" in inflight, inflight
    assert "rate(shopfront_inflight_requests" not in inflight, inflight


def test_init_suggests_an_error_share_from_what_the_status_label_holds(init_run):
    _, written = init_run
    [worker] = [line for line in written.splitlines() if "worker_requests_total:" in line]
    assert "[prometheus.metrics.<name>]" in worker, worker  # two services carry it: the shared catalogue
    assert "its outcome=~\"error|timeout\" share as role 'errors'" in worker, worker
    assert "outcome holds error, success, timeout: not status codes" in worker and "5.." not in worker, worker


def test_init_lists_an_ingress_it_did_not_place(init_run):
    printed, _ = init_run
    assert "nginx_ingress_controller_requests: a request counter with a status label" in printed, printed
    assert "nginx_ingress_controller_request_duration_seconds: a latency histogram" in printed, printed


def test_a_declared_type_wins_over_the_name():
    from tools.metrics.unplaced import metric_type

    declared = {"queue_depth_total": "gauge", "jobs_lag": "counter"}
    assert metric_type("queue_depth_total", declared) == "gauge"
    assert metric_type("jobs_lag", declared) == "counter"
    assert metric_type("jobs_done_total", declared) == "counter"  # no metadata: the suffix
    assert metric_type("nginx_ingress_controller_requests", {}) == "counter"  # a convention's counter
    assert metric_type("pool_in_use", {}) == "gauge"


def test_init_says_no_up_series_names_the_services_and_turns_that_check_off(init_run):
    printed, written = init_run
    assert "✓ prometheus.up_metric = ''\n    no up series is active: a series that stops is not told apart" in printed
    assert "up_metric = ''" in written


def test_doctor_warns_of_a_default_up_metric_prometheus_does_not_hold(config, tmp_path):
    text = config.read_text().replace("up_metric = ''\n", "")
    assert "up_metric" not in text
    default = tmp_path / "default-up.toml"
    default.write_text(text)
    lines = [str(r) for r in check_metrics_meaning(Settings(_env_file=None, config_file=default))]  # type: ignore[call-arg]
    [warned] = [line for line in lines if "up_metric" in line]
    assert warned.startswith("WARN metrics: prometheus.up_metric = 'up' (default): Prometheus holds no up series")
    assert "or to '' to turn the check off" in warned
    assert not any(line.startswith("FAIL") for line in lines), lines


def test_an_up_metric_the_user_set_that_prometheus_does_not_hold_fails(config, tmp_path):
    chosen = tmp_path / "chosen-up.toml"
    chosen.write_text(config.read_text().replace("up_metric = ''", "up_metric = 'upp'"))
    lines = [str(r) for r in check_metrics_meaning(Settings(_env_file=None, config_file=chosen))]  # type: ignore[call-arg]
    assert any(line.startswith("FAIL metrics: prometheus.up_metric = 'upp' (config file") for line in lines), lines


def test_a_default_log_field_no_document_holds_is_a_warning_and_answers_say_it_was_not_checked(make_stack, tmp_path):
    from tests.stacks.test_end_to_end import _families_present, doctor, init
    from tests.stacks.test_end_to_end import opsbot as opsbot_with_logs

    _families_present()
    stack = make_stack("otel")  # OpenTelemetry logs carry no host field
    config = init(stack, tmp_path)
    code, lines = doctor(config)
    [line] = [line for line in lines if "logs.host_field" in line]
    assert code == 0 and line.startswith("WARN logs: logs.host_field = 'host' (default): the default is not in"), line
    assert "set logs.host_field to the field that holds it, or to '' to turn it off" in line
    [namespace] = [line for line in lines if "logs.namespace_field" in line]
    assert namespace.startswith("WARN logs: logs.namespace_field = 'namespace' (default): the default is"), namespace
    [topology] = [line for line in lines if line.startswith(("WARN topology", "OK   topology", "FAIL topology"))]
    assert topology.startswith("WARN topology: topology is not set (OPSBOT_TOPOLOGY"), topology
    assert "a caller's question cannot weigh its dependencies' deploys" in topology, topology
    answer = opsbot_with_logs("diagnose", stack.built.question, cwd=tmp_path, OPSBOT_CONFIG_FILE=str(config)).stdout
    assert "not checked: host (logs.host_field 'host'): in no document of logs-otel" in answer, answer


def test_a_service_said_as_people_say_it_is_diagnosed_and_the_reading_named(config, tmp_path):
    from bot.engine.types import Question

    aliased = tmp_path / "aliased.toml"
    guessing = "guess_service_names = true\n"  # a top-level key: before the file's first table
    aliased.write_text(guessing + config.read_text() + '\n[aliases]\nsearch = ["finder"]\n')
    responder = wiring.build_responder(Settings(_env_file=None, config_file=aliased))  # type: ignore[call-arg]
    trace = responder(Question("why is checkout slow?"), None)
    assert trace.question == "why is checkout slow?"
    assert "checkout-api" in trace.answer.split("Evidence:")[0], trace.answer
    assert "'checkout' read as checkout-api (the one service whose name starts with it)" in trace.answer
    trace = responder(Question("is finder slow?"), None)
    assert "'finder' read as search (an alias of it in aliases.search)" in trace.answer
    assert f"search's p99_latency: {CAPPED}" in trace.answer, trace.answer
    assert trace.answer.count("Service names:") == 1, trace.answer


def test_init_reads_opentelemetry_pool_usage_as_saturation(settings):
    usage = settings.prometheus.metrics["db_pool_usage"]
    assert usage.role == "saturation" and "db_client_connections_usage" in usage.promql
    assert "db_pool_usage" in settings.prometheus.services["checkout-api"].not_measured


def test_the_service_names_line_is_printed_once(config, tmp_path):
    from bot.engine.types import Question
    from bot.wiring.roles import with_service_names
    from tools.servicenames import services_said

    aliased = tmp_path / "aliased.toml"
    guessing = "guess_service_names = true\n"  # a top-level key: before the file's first table
    aliased.write_text(guessing + config.read_text() + '\n[aliases]\nsearch = ["finder"]\n')
    responder = wiring.build_responder(Settings(_env_file=None, config_file=aliased))  # type: ignore[call-arg]
    trace = responder(Question("is finder slow? finder p99 since 10:00"), None)
    assert trace.answer.count("Service names:") == 1, trace.answer
    assert trace.answer.count("'finder' read as search") == 1, trace.answer
    _, readings = services_said("is finder slow?", ["search"], {"search": ["finder"]})
    again = with_service_names(trace.answer, readings)  # an answer that passes through a second time
    assert again.count("Service names:") == 1 and again == trace.answer, again


SHARE_OF_NOTHING = (
    '(sum(rate(worker_requests_total{$label="$service",outcome="SERVER_ERROR"}[5m])) or vector(0))'
    ' / sum(rate(worker_requests_total{$label="$service"}[5m]))'
)


def test_doctor_runs_a_services_own_entries_and_warns_of_a_share_that_reads_0_throughout(config, tmp_path):
    own = tmp_path / "own.toml"
    own.write_text(
        config.read_text()
        + f"\n[prometheus.services.cart.metrics.worker_errors]\npromql = '{SHARE_OF_NOTHING}'\nunit = 'ratio'\n"
        + "\n[prometheus.services.cart.metrics.queue_depth]\npromql = 'max(cart_queue_depth{$label=\"$service\"})'\n"
        + "unit = 'count'\n"
    )
    lines = [str(r) for r in check_metrics_meaning(Settings(_env_file=None, config_file=own))]  # type: ignore[call-arg]
    [zero] = [line for line in lines if "worker_errors" in line]
    assert zero.startswith("WARN metrics: prometheus.services.cart.metrics.worker_errors.promql = "), zero
    assert "cart: it reads 0 for the whole last hour while its total" in zero, zero
    assert 'outcome="SERVER_ERROR" where worker_requests_total\'s outcome holds error, success, timeout' in zero
    [empty] = [line for line in lines if "queue_depth" in line]
    assert empty.startswith("FAIL metrics: prometheus.services.cart.metrics.queue_depth.promql = "), empty
    assert "cart_queue_depth" in empty, empty
    assert not any("checkout-api" in line and "worker_errors" in line for line in lines), lines


def test_a_share_with_errors_is_not_warned_of(metrics, settings):
    lines = [str(r) for r in check_metrics_meaning(settings)]
    assert not any("reads 0 for the whole last hour" in line for line in lines), lines
