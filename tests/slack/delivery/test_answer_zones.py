"""The final Slack message keeps times shown in the team's zone, and says "yesterday" by that zone's days."""

from __future__ import annotations

import json

import pytest

from bot.engine.types import Step, StopReason, Totals, Trace
from bot.slack.delivery.answer import trace_to_blocks


def answer_at(answer: str, started_at: str) -> str:
    trace = Trace(
        trace_id="t1",
        question="why is order slow?",
        protocol="playbook",
        steps=(Step(index=1, thought="", action="query_metrics", args={}, observation="p99", status="ok"),),
        answer=answer,
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(steps=1),
        started_at=started_at,
    )
    return json.dumps(trace_to_blocks(trace), ensure_ascii=False)


@pytest.mark.parametrize(
    ("stamp", "started_at", "shown"),
    [
        ("2026-11-30 16:02 CET (15:02 UTC)", "2026-11-30T18:00:00+00:00", "at 16:02 CET (15:02 UTC)"),
        ("2026-11-30 16:02 CET (15:02 UTC)", "2026-12-01T09:00:00+00:00", "yesterday at 16:02 CET (15:02 UTC)"),
        # 23:30 UTC is already the next day in Berlin: yesterday by the team's days, though not by UTC's
        ("2026-11-30 16:02 CET (15:02 UTC)", "2026-11-30T23:30:00+00:00", "yesterday at 16:02 CET (15:02 UTC)"),
        ("2026-11-30 15:02 UTC", "2026-11-30T23:30:00+00:00", "at 15:02 UTC"),
        ("2026-11-28 16:02 CET (15:02 UTC)", "2026-12-01T09:00:00+00:00", "at 2026-11-28 16:02 CET (15:02 UTC)"),
    ],
)
def test_times_in_the_team_zone_read_as_that_zones_days(stamp: str, started_at: str, shown: str) -> None:
    text = answer_at(f"Likely cause: deploy order v2.8.1 at {stamp}, which raised the pool size.", started_at)
    assert f"deploy order v2.8.1 {shown}, which raised" in text
