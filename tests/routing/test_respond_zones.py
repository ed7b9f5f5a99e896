"""The Router and time zones: the model is told the team's zone and the question's time in UTC; the answer's UTC
times leave in the team's zone with UTC beside them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bot.engine.types import Budget, Intent, Question
from bot.playbook.zones import zone_from_name
from bot.routing.respond import Router
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm
from tools.base import Toolbox, tool


def p99_ms(service: str) -> str:
    """Current p99 latency of a service in ms. Use for one current value."""
    return f"p99 {service}: 1180 ms\nchange: 15:05 212 ms -> 1,180 ms (x5.6)"


def router(llm: ScriptedLLM, zone: str) -> Router:
    return Router(
        llm=scripted_openai_llm(llm),
        tools=Toolbox([tool(p99_ms)]),
        budget=Budget(max_steps=4),
        classify=lambda text: Intent("diagnose", 0.9, "rules", "test"),
        zone=zone_from_name(zone),
    )


def test_the_model_learns_the_team_zone_and_the_answer_shows_it(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]},
        {"content": "order p99 rose from 212 ms to 1,180 ms at 15:05 UTC."},
    )
    trace = router(scripted_llm, "Europe/Berlin")(Question("why is order slow since 16:00?"), None)
    sent = json.dumps(scripted_llm.chat_requests[0].body["messages"], ensure_ascii=False)

    assert "Times: the team's time zone is Europe/Berlin" in sent and "the tools take and print UTC" in sent
    berlin_now = datetime.now(UTC).astimezone(zone_from_name("Europe/Berlin"))
    asked_utc = berlin_now.replace(hour=16, minute=0).astimezone(UTC).strftime("%H:%M")
    assert "the question's time is" in sent and f"T{asked_utc}Z" in sent
    assert f" {berlin_now:%Z} (15:05 UTC)" in trace.answer


def test_a_utc_team_asking_without_a_zone_gets_no_time_line(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        {"content": "", "tool_calls": [{"name": "p99_ms", "arguments": {"service": "order"}}]},
        {"content": "order p99 rose at 15:05 UTC."},
    )
    trace = router(scripted_llm, "UTC")(Question("why is order slow since 16:00?"), None)
    sent = json.dumps(scripted_llm.chat_requests[-1].body["messages"], ensure_ascii=False)
    assert "take and print UTC" not in sent and trace.answer == "order p99 rose at 15:05 UTC."
