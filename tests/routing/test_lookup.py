"""The model-free quick lookup over the real tools and the real sandbox (Prometheus, git deploys), no LLM."""

from __future__ import annotations

import pytest

from bot import wiring
from bot.engine.types import Question, Step, StopReason, Trace
from bot.routing.intent import classify
from bot.routing.lookup import answer_lookup, asked_from_text
from bot.safety.grounding import unverified_claims
from tests.eval.harness import sandbox_settings
from tests.fakes.llm import ScriptedLLM
from tests.toolresults import WINDOW, at, deploys, record, result, series
from tools.analysis.changepoints import Stop
from tools.base import Toolbox, ToolData, ToolResult, tool
from tools.deploys.records import DeployList
from tools.metrics.series import ServiceList

ROLES = {
    "latency": "p99_latency",
    "traffic": "qps",
    "errors": "error_rate",
    "cpu": "cpu_usage",
    "memory": "memory_usage",
    "restarts": "restarts",
}


def _respond(box, tmp_path, text: str, steps: list[Step] | None = None, **overrides) -> Trace:
    """The full path a user's question takes (build_responder), with no LLM unless overrides give one."""
    responder = wiring.build_responder(sandbox_settings(box, tmp_path, **overrides))
    return responder(Question(text), steps.append if steps is not None else None)


def _grounded(trace: Trace) -> list[str]:
    return unverified_claims(trace.answer, [trace.question, *(s.observation for s in trace.steps)])


@pytest.mark.parametrize(
    ("text", "metric"),
    [
        ("what is the p99 of order now?", "p99_latency"),
        ("当前 order 的 QPS 是多少", "qps"),
        ("gateway 现在的错误率是多少", "error_rate"),
        ("show me the memory of payment", "memory_usage"),
    ],
)
def test_a_metric_lookup_without_a_model_is_one_query(sandbox, tmp_path, text: str, metric: str) -> None:
    seen: list[Step] = []
    trace = _respond(sandbox, tmp_path, text, seen)
    assert trace.intent is not None and trace.intent.route == "lookup"
    assert trace.protocol == "single" and trace.complete and trace.stop_reason is StopReason.FINISH
    assert [s.action for s in trace.steps] == ["query_metrics"] and list(trace.steps) == seen
    step = trace.steps[0]
    assert step.args["metric"] == metric and step.args["range"] == "1h" and step.status == "ok" and step.thought
    assert trace.totals.tool_calls == 1 and trace.totals.tokens == 0
    stats = next(line for line in step.observation.splitlines() if line.startswith("min "))
    assert f"> {stats}" in trace.answer  # last, median and max, quoted from the observation
    assert "without a model" in trace.answer
    assert _grounded(trace) == [] and "unverified" not in trace.answer


def test_the_lead_names_the_last_sample(sandbox, tmp_path) -> None:
    trace = _respond(sandbox, tmp_path, "what is the p99 of order now?")
    stats = next(line for line in trace.steps[0].observation.splitlines() if line.startswith("min "))
    last = stats.split(" · last ")[1]
    assert trace.answer.startswith(f"order's p99_latency is {last} (the last sample")


@pytest.mark.parametrize("text", ["what was the last deploy of order?", "order 最近一次发布是什么版本"])
def test_a_deploy_lookup_quotes_the_newest_deploy(sandbox, tmp_path, text: str) -> None:
    trace = _respond(sandbox, tmp_path, text)
    assert [s.action for s in trace.steps] == ["query_deploy_records"]
    assert trace.steps[0].args == {"service": "order", "range": "7d"}
    assert trace.answer.startswith("The newest deploy of order: order/v2.8.1 at 20")
    newest = trace.steps[0].observation.splitlines()[1]
    assert f"> {newest}" in trace.answer and "v2.8.1" in newest
    assert trace.complete and _grounded(trace) == []


def test_an_unknown_service_falls_back_to_the_playbook_with_a_note(sandbox, tmp_path) -> None:
    trace = _respond(sandbox, tmp_path, "what is the p99 of billing now?")
    assert trace.protocol == "playbook"
    why = trace.notes[0]
    assert "quick lookup could not answer" in why and "names no known service; known: " in why and "payment" in why
    assert "quick lookup could not answer" in trace.answer.splitlines()[0]


def test_two_values_at_once_fall_back_to_the_playbook(sandbox, tmp_path) -> None:
    trace = _respond(sandbox, tmp_path, "what is the p99 and qps of order now?")
    assert trace.protocol == "playbook"
    assert any("more than one thing (latency, traffic)" in n for n in trace.notes)


def test_llm_down_at_the_first_call_tries_the_quick_lookup(sandbox, tmp_path, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script({"status": 500, "repeat": 10})
    trace = _respond(
        sandbox,
        tmp_path,
        "what is the p99 of order now?",
        llm_base_url=scripted_llm.base_url,
        intent={"use_model": False},
    )
    assert trace.protocol == "single" and [s.action for s in trace.steps] == ["query_metrics"]
    assert "LLM was unavailable" in trace.answer.splitlines()[0]
    assert any(n.startswith("LLM unavailable") for n in trace.notes)
    assert _grounded(trace) == []


def test_without_list_services_a_service_outside_the_topology_is_found(sandbox, tmp_path) -> None:
    settings = sandbox_settings(sandbox, tmp_path, topology={})
    tools = wiring.build_toolbox(settings)
    trace = answer_lookup(Question("cpu of payment right now?"), tools, metric_roles=ROLES)
    assert trace is not None
    assert [s.action for s in trace.steps] == ["list_services", "query_metrics"]  # every call is shown
    assert trace.steps[1].args["service"] == "payment"


def test_a_longer_service_name_wins(sandbox, tmp_path) -> None:
    tools = wiring.build_toolbox(sandbox_settings(sandbox, tmp_path))
    trace = answer_lookup(Question("orders-db p99 now"), tools, metric_roles=ROLES, services=["order", "orders-db"])
    assert trace is not None and trace.steps[0].args["service"] == "orders-db"


def test_a_role_without_a_metric_says_so(sandbox, tmp_path) -> None:
    tools = wiring.build_toolbox(sandbox_settings(sandbox, tmp_path))
    misses: list[str] = []
    trace = answer_lookup(
        Question("cpu of order now"),
        tools,
        metric_roles={"latency": "p99_latency"},
        services=["order"],
        on_miss=misses.append,
    )
    assert trace is None and misses == ["no catalogue metric has the role 'cpu'"]


def test_a_backend_error_is_an_honest_partial(sandbox, tmp_path) -> None:
    down = {"url": "http://127.0.0.1:9", "timeout_s": 1.0}
    tools = wiring.build_toolbox(sandbox_settings(sandbox, tmp_path, prometheus=down))
    trace = answer_lookup(Question("p99 of order now"), tools, metric_roles=ROLES, services=["order"])
    assert trace is not None and not trace.complete
    assert trace.steps[0].status == "error" and trace.answer.startswith("I could not read order's p99_latency")


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("order的p99现在是多少", ["latency"]),
        ("how many 5xx requests does order serve", ["errors"]),
        ("requests per second of order", ["traffic"]),
        ("what version of payment is running?", ["deploys"]),
        ("payment 重启了几次", ["restarts"]),
        ("hello", []),
    ],
)
def test_what_a_question_asks_for(text: str, asked: list[str]) -> None:
    assert asked_from_text(text) == asked


@pytest.mark.parametrize(
    "text",
    [
        "what is the p99 of order now?",
        "当前 order 的 QPS 是多少",
        "what was the last deploy of payment?",
        "show me cpu of gateway",
        "order 最近一次发布是什么版本",
        "what's the error rate of order?",
    ],
)
def test_what_the_gate_calls_a_lookup_the_lookup_understands(text: str) -> None:
    assert classify(text).route == "lookup"
    assert len(asked_from_text(text)) == 1


def typed_tools(**answers: ToolData) -> Toolbox:
    """query_metrics, query_deploy_records and list_services answering with fixed data and the text rendered from
    it, as the built-in tools do."""

    def query_metrics(service: str, metric: str, range: str = "1h") -> ToolResult:
        return result(answers["series"])

    def query_deploy_records(service: str, range: str = "7d") -> ToolResult:
        return result(answers["deploys"])

    def list_services() -> ToolResult:
        listed = ServiceList("service", ("order", "payment"), 2)
        return ToolResult("ok", "2 services (label 'service'):\norder\npayment", listed)

    return Toolbox([tool(query_metrics), tool(query_deploy_records), tool(list_services)])


def test_a_series_that_stopped_is_answered_with_its_stop_quoted() -> None:
    stopped = series(changes=[], stop=Stop(at("15:20"), 55.9, 2_400.0))
    trace = answer_lookup(Question("p99 of order now"), typed_tools(series=stopped), metric_roles=ROLES)
    assert trace is not None and [s.action for s in trace.steps] == ["list_services", "query_metrics"]
    assert trace.answer.startswith("order's p99_latency is 100 ms (the last sample; median 100 ms, max 100 ms")
    assert "\n> stopped: no samples after 15:20 (last 55.9 ms), 40m to the window's end; cause: unknown" in trace.answer
    assert _grounded(trace) == []


def test_a_deploy_lookup_reads_the_newest_record() -> None:
    found = deploys(record("v2.8.2", "16:10", author="li wei"), record())  # an author with a space
    trace = answer_lookup(Question("latest deploy of order?"), typed_tools(deploys=found), metric_roles=ROLES)
    assert trace is not None
    lead, heading, newest, _ = trace.answer.splitlines()
    assert lead == "The newest deploy of order: order/v2.8.2 at 2026-11-28T16:10:00Z."
    assert heading.startswith("> deploys of order, ") and heading.endswith(": 2 found, newest first")
    assert newest.startswith("> 2026-11-28T16:10:00Z order/v2.8.2 (from v2.8.0) by li wei: Raise Hikari pool size")
    assert _grounded(trace) == []


def test_no_deploy_in_the_window_says_so_and_quotes_the_latest_before_it() -> None:
    none = DeployList("order", WINDOW, (), 0, latest_before=record())
    trace = answer_lookup(Question("latest deploy of order?"), typed_tools(deploys=none), metric_roles=ROLES)
    assert trace is not None
    assert trace.answer.splitlines()[:2] == [
        "No deploys of order in the last 7 days.",
        f"> deploys of order, {WINDOW.describe()}: none. The latest before it: order/v2.8.1 at 2026-11-28T15:02:00Z.",
    ]
