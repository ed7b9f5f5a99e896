"""Rendering stays within Slack's limits, whatever the size of the trace."""

from __future__ import annotations

import json
from dataclasses import replace

from bot.engine.types import Intent, Step, StopReason, Totals, Trace
from bot.slack.delivery.answer import OFFER_INVESTIGATE_ABOVE, trace_to_blocks, trace_to_text
from bot.slack.delivery.render import (
    ACTION_INVESTIGATE_ANSWER,
    ACTION_RERUN,
    ACTION_SHOW_TRACE,
    ACTION_VOTE_DOWN,
    ACTION_VOTE_UP,
    MAX_MODAL_BLOCKS,
    MAX_TASK_CHARS,
    MAX_TEXT_CHARS,
    limit_violations,
    modal_pages,
    page_from_value,
    progress_blocks,
    step_to_task_chunk,
    trace_to_modal,
)
from tests import toolresults
from tests.toolresults import series


def make_trace(
    *,
    steps: int = 3,
    observation: str = "",
    answer: str = "",
    complete: bool = True,
    stop: StopReason = StopReason.FINISH,
) -> Trace:
    """Steps that read order's p99 (change: 15:05 212 ms -> 1,180 ms (x5.6)), or got `observation` as text only."""
    read = toolresults.step(1, "query_metrics", series(metric="p99"), service="order", metric="p99")
    shown = replace(read, observation=observation, data=None) if observation else read
    return Trace(
        trace_id="t123",
        question="why is order slow since 15:05?",
        protocol="native",
        steps=tuple(replace(shown, index=i, thought=f"check {i}", elapsed_ms=40) for i in range(1, steps + 1)),
        answer=answer or "Root cause: order v2.8.1 raised hikari.maximumPoolSize 50 -> 200.",
        complete=complete,
        stop_reason=stop,
        totals=Totals(steps=steps, prompt_tokens=1200, completion_tokens=300, elapsed_ms=23_400),
        model="scripted-model",
        intent=Intent("diagnose", 0.9, "rules", "asks why"),
        notes=("unverified: 42 ms",),
    )


def all_text(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_final_message_has_answer_evidence_tokens_time_and_three_controls() -> None:
    blocks = trace_to_blocks(make_trace())
    text = all_text(blocks)
    assert "maximumPoolSize" in text and "order p99 212 ms → 1,180 ms (x5.6) at 15:05" in text
    assert "1,500 tokens" in text and "23.4 s" in text and "unverified: 42 ms" in text
    [controls] = [b for b in blocks if b["type"] == "actions"]
    assert [e["action_id"] for e in controls["elements"]] == [
        ACTION_VOTE_UP,
        ACTION_VOTE_DOWN,
        ACTION_RERUN,
        ACTION_SHOW_TRACE,
    ]
    assert all(e["value"] == "t123" for e in controls["elements"])
    assert limit_violations(blocks) == []


def test_partial_answer_states_the_stop_reason() -> None:
    blocks = trace_to_blocks(make_trace(complete=False, stop=StopReason.MAX_STEPS))
    assert "Partial answer" in blocks[0]["text"]["text"] and "max_steps" in blocks[0]["text"]["text"]
    assert "Partial answer (max_steps)" in trace_to_text(make_trace(complete=False, stop=StopReason.MAX_STEPS))


def test_100k_character_trace_renders_within_limits() -> None:
    huge = make_trace(steps=60, observation="x" * 100_000, answer="y" * 100_000)
    blocks = trace_to_blocks(huge)
    assert limit_violations(blocks) == []
    assert len(all_text(blocks)) < 40_000
    assert "opsbot traces show t123" in all_text(blocks)
    assert 0 < len(trace_to_text(huge)) <= MAX_TEXT_CHARS
    modal = trace_to_modal(huge)
    assert limit_violations(modal["blocks"], max_blocks=MAX_MODAL_BLOCKS) == []
    assert len(modal["title"]["text"]) <= 24
    assert "opsbot traces show t123" in all_text(modal["blocks"])
    for step in huge.steps[:3]:
        chunk = step_to_task_chunk(step)
        assert len(chunk["title"]) <= MAX_TASK_CHARS and len(chunk["output"]) <= MAX_TASK_CHARS


def test_many_long_notes_and_steps_stay_within_limits() -> None:
    trace = make_trace(steps=200, observation="line\n" * 2_000)
    trace = Trace(**{**trace.__dict__, "notes": tuple("n" * 5_000 for _ in range(40))})
    assert limit_violations(trace_to_blocks(trace)) == []
    assert limit_violations(trace_to_modal(trace)["blocks"], max_blocks=MAX_MODAL_BLOCKS) == []


def test_answer_from_the_model_cannot_ping_the_channel() -> None:
    trace = make_trace(answer="<!channel> order is down <!here> @everyone")
    text = all_text(trace_to_blocks(trace)) + trace_to_text(trace)
    assert "<!channel>" not in text and "<!here>" not in text and "@everyone" not in text


def test_progress_lists_steps_and_stays_small() -> None:
    trace = make_trace(steps=50, observation="z" * 10_000)
    blocks = progress_blocks(trace.question, trace.steps, elapsed_s=12.0)
    assert limit_violations(blocks) == []
    assert "step 50" in all_text(blocks)


def test_task_chunk_marks_errors() -> None:
    step = Step(
        index=2, thought="logs", action="query_logs", args={"service": "order"}, observation="boom", status="error"
    )
    chunk = step_to_task_chunk(step)
    assert chunk == {
        "type": "task_update",
        "id": "step-2",
        "title": "Logs: order",
        "status": "error",
        "output": "not checked (error): boom",
    }


def test_modal_pages_cover_every_step_within_limits() -> None:
    trace = make_trace(steps=200, observation="o" * 5_000)
    pages = modal_pages(trace.steps)
    assert [s.index for page in pages for s in page] == list(range(1, 201))
    for page in range(len(pages)):
        modal = trace_to_modal(trace, page)
        assert limit_violations(modal["blocks"], max_blocks=MAX_MODAL_BLOCKS) == []
        assert f"page {page + 1} of {len(pages)}" in all_text(modal["blocks"])
    last = trace_to_modal(trace, 999)  # out of range: clamped to the last page
    [nav] = [b for b in last["blocks"] if b["type"] == "actions"]
    assert [e["value"] for e in nav["elements"]] == [f"t123|{len(pages) - 2}"]
    assert page_from_value(f"t123|{len(pages) - 2}") == ("t123", len(pages) - 2)


def test_short_trace_fits_one_page_without_navigation() -> None:
    modal = trace_to_modal(make_trace(steps=3))
    assert not [b for b in modal["blocks"] if b["type"] == "actions"]
    assert "maximumPoolSize" in all_text(modal["blocks"])


def _quick(route: str, tier: str, diagnose_probability: float, *, steps: int = 0, protocol: str = "single") -> Trace:
    intent = Intent(route, 0.9, tier, "test", diagnose_probability=diagnose_probability)  # type: ignore[arg-type]
    trace = make_trace(steps=steps, answer=f"{route} answer")
    return Trace(**{**trace.__dict__, "intent": intent, "protocol": protocol})


def _buttons(blocks: list[dict]) -> list[str]:
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


def test_the_offer_to_investigate_follows_who_chose_the_route_and_how_likely_a_diagnosis_was() -> None:
    assert _buttons(trace_to_blocks(_quick("lookup", "classifier", 0.0)))[0] == ACTION_INVESTIGATE_ANSWER
    assert _buttons(trace_to_blocks(_quick("chitchat", "classifier", OFFER_INVESTIGATE_ABOVE))) == [
        ACTION_INVESTIGATE_ANSWER
    ]
    assert _buttons(trace_to_blocks(_quick("act", "model", 0.4))) == [ACTION_INVESTIGATE_ANSWER]
    assert _buttons(trace_to_blocks(_quick("chitchat", "classifier", OFFER_INVESTIGATE_ABOVE / 2))) == []
    # a person chose "Just answer", or a rule routed it: no second-guessing
    assert ACTION_INVESTIGATE_ANSWER not in _buttons(trace_to_blocks(_quick("lookup", "rules", 0.9)))
    assert _buttons(trace_to_blocks(_quick("help", "rules", 0.9))) == []
    # a lookup the Router escalated to the full diagnosis already investigated
    escalated = _quick("lookup", "classifier", 0.3, steps=3, protocol="playbook")
    assert ACTION_INVESTIGATE_ANSWER not in _buttons(trace_to_blocks(escalated))
    assert ACTION_INVESTIGATE_ANSWER not in _buttons(
        trace_to_blocks(_quick("diagnose", "classifier", 0.9, steps=2, protocol="native"))
    )
