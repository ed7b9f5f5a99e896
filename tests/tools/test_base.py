"""call_tool() is the single boundary: every failure the model could fix comes back as an observation."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Annotated, Literal

import pytest

from bot.safety.redact import redact
from tests.safety.secret_shapes import SECRETS
from tests.tools.result_samples import AT, log_summary
from tools.base import Toolbox, ToolError, ToolResult, call_tool, redacted_data, tool
from tools.logs.summary import LogSummary
from tools.metrics.series import ServiceList


def query_things(service: Annotated[str, "service name"], window: Literal["1h", "6h"] = "1h", limit: int = 10) -> str:
    """Look up things for a service. Returns up to `limit` lines."""
    if service == "down":
        raise ConnectionError("connection refused to 127.0.0.1:1")
    if service == "unknown":
        raise ToolError("unknown service 'unknown'; known: order, payment")
    if service == "empty":
        return ""
    return f"{service} {window} {limit}"


def slow_tool(seconds: float) -> str:
    """Sleep (tests only)."""
    threading.Event().wait(seconds)
    return "late"


@pytest.fixture
def box() -> Toolbox:
    return Toolbox([tool(query_things), tool(slow_tool)])


def test_schema_comes_from_signature_and_docstring() -> None:
    spec = tool(query_things)
    assert spec.name == "query_things"
    assert spec.description.startswith("Look up things for a service.")
    props = spec.parameters["properties"]
    assert props["service"] == {"description": "service name", "type": "string"}
    assert props["window"]["enum"] == ["1h", "6h"]
    assert spec.parameters["required"] == ["service"]
    assert spec.to_openai()["function"]["name"] == "query_things"


def test_runtime_choices_narrow_a_parameter(box: Toolbox) -> None:
    spec = tool(query_things, name="query_choice", choices={"service": ["order", "payment"]})
    assert spec.parameters["properties"]["service"]["enum"] == ["order", "payment"]
    result = call_tool(Toolbox([spec]), "query_choice", {"service": "ordr"})
    assert result.status == "error"
    assert "'order'" in result.text and "ordr" in result.text


def test_duplicate_tool_names_fail_at_startup() -> None:
    with pytest.raises(ValueError, match="duplicate tool name 'query_things'"):
        Toolbox([tool(query_things), tool(query_things)])


def test_unknown_tool_lists_valid_tools(box: Toolbox) -> None:
    result = call_tool(box, "query_stuff", {})
    assert result == ToolResult("error", "unknown tool 'query_stuff'. Valid tools: query_things, slow_tool.")


def test_invalid_arguments_tell_the_model_what_was_wrong(box: Toolbox) -> None:
    result = call_tool(box, "query_things", {"service": "order", "window": "2h", "colour": "red"})
    assert result.status == "error"
    assert "window: Input should be '1h' or '6h' (got '2h')" in result.text
    assert "colour: Extra inputs are not permitted" in result.text
    missing = call_tool(box, "query_things", {})
    assert "service: Field required" in missing.text


def test_oversized_arguments_are_refused(box: Toolbox) -> None:
    result = call_tool(box, "query_things", {"service": "x" * 3000}, max_args_chars=2000)
    assert result.status == "refused"
    assert "the limit is 2,000" in result.text


def test_tool_error_keeps_its_message(box: Toolbox) -> None:
    result = call_tool(box, "query_things", {"service": "unknown"})
    assert result == ToolResult("error", "unknown service 'unknown'; known: order, payment")


def test_unexpected_exception_keeps_backend_text(box: Toolbox) -> None:
    result = call_tool(box, "query_things", {"service": "down"})
    assert result.status == "error"
    assert "ConnectionError: connection refused to 127.0.0.1:1" in result.text


def test_empty_output_is_no_data(box: Toolbox) -> None:
    assert call_tool(box, "query_things", {"service": "empty"}).status == "no_data"


def test_lax_types_are_coerced(box: Toolbox) -> None:
    assert call_tool(box, "query_things", {"service": "order", "limit": "5"}).text == "order 1h 5"


def test_slow_tool_times_out_as_observation(box: Toolbox) -> None:
    result = call_tool(box, "slow_tool", {"seconds": 2}, timeout_s=0.05)
    assert result.status == "error"
    assert "timed out after 0.05 s" in result.text


def test_redact_hook_applies_to_every_result() -> None:
    box = Toolbox([tool(query_things)], redact=lambda text: text.replace("order", "[REDACTED]"))
    assert call_tool(box, "query_things", {"service": "order"}).text == "[REDACTED] 1h 10"


def read_logs(secret: bool = False, fail: bool = False) -> ToolResult:
    """Log signatures as typed data (tests only)."""
    data = log_summary("login with api_key=sk-live-abcdef1234567890abcdef") if secret else log_summary()
    return ToolResult("error" if fail else "ok", "the text", data)


def test_the_data_comes_back_as_the_tool_built_it() -> None:
    result = call_tool(Toolbox([tool(read_logs)]), "read_logs", {})
    assert result.status == "ok" and result.data == log_summary()


def test_redaction_reaches_the_strings_inside_the_data_and_leaves_numbers_and_times() -> None:
    box = Toolbox([tool(read_logs)], redact=redact)
    result = call_tool(box, "read_logs", {"secret": True})
    data = result.data
    assert isinstance(data, LogSummary) and data.signatures is not None
    message = data.signatures.top[0].example.message
    assert "sk-live" not in message and "[REDACTED" in message
    assert data.total == 300 and data.signatures.top[0].first_at == AT
    assert data.onset is not None and data.onset.new is not None and "sk-live" not in str(data.onset.new)
    # where the secret was; everything else is as it was built
    assert replace(data, signatures=None, onset=None) == replace(log_summary(), signatures=None, onset=None)


def test_an_error_carries_no_data_whatever_the_tool_returned_with_it() -> None:
    for box in (Toolbox([tool(read_logs)]), Toolbox([tool(read_logs)], redact=redact)):
        result = call_tool(box, "read_logs", {"fail": True})
        assert result == ToolResult("error", "the text")


def test_tool_calls_still_run_while_the_interpreter_shuts_down(box: Toolbox, monkeypatch: pytest.MonkeyPatch) -> None:
    # concurrent.futures refuses new work once interpreter shutdown began (the flag its atexit hook sets),
    # while diagnoses still draining after SIGTERM need their tools.
    import concurrent.futures.thread

    monkeypatch.setattr(concurrent.futures.thread, "_shutdown", True)
    result = call_tool(box, "query_things", {"service": "order"})
    assert result.status == "ok" and result.text == "order 1h 10"


def every_secret_string() -> list[str]:
    """Each planted secret's carrier line, the secret alone, and the secret at a string's end."""
    return [text for secret, line in SECRETS.values() for text in (line, secret, f"took {secret}")]


@pytest.mark.parametrize("cut_key", [False, True], ids=["one-pass", "a-key-block-cut-off-at-a-string-end"])
def test_the_data_pass_redacts_each_string_as_redacting_it_alone_would(cut_key: bool) -> None:
    strings = every_secret_string() + (["-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98R", "after"] * cut_key)
    data = ServiceList("service", tuple(strings), len(strings))
    calls: list[str] = []

    def counted(text: str) -> str:
        calls.append(text)
        return redact(text)

    cleaned = redacted_data(data, counted)
    one_by_one = len({"service", *strings})  # the label is a string of the data too
    assert len(calls) == (1 + one_by_one if cut_key else 1)  # one pass; one by one when a match ran past a string
    assert isinstance(cleaned, ServiceList) and cleaned.services == tuple(redact(text) for text in strings)
    carriers = dict(zip(strings, cleaned.services, strict=True))
    assert all(secret not in carriers[line] for secret, line in SECRETS.values())


def test_data_with_nothing_to_redact_comes_back_as_it_was() -> None:
    data = log_summary()
    assert redacted_data(data, redact) is data
