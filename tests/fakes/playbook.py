"""RecordingPlaybook: a stand-in for run_playbook that records the questions it got and answers one fixed step."""

from __future__ import annotations

import threading
from datetime import datetime

from bot.engine.types import Question, Step, StepObserver, StopReason, Totals, Trace
from tools.base import Toolbox

OBSERVATION = "p99 order: 1180 ms\nchange: 15:05 212 ms -> 1,180 ms (x5.6)"
ANSWER = "order p99 rose 212 ms -> 1,180 ms at 15:05."


class RecordingPlaybook:
    """Called like run_playbook(question, tools, on_step=); each call is recorded, each answer is ANSWER.

    `gate`, when given, holds every run until it is set (to keep a diagnosis running).
    """

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.questions: list[Question] = []
        self.gate = gate

    def __call__(
        self, question: Question, tools: Toolbox, *, on_step: StepObserver | None = None, now: datetime | None = None
    ) -> Trace:
        self.questions.append(question)
        if self.gate is not None:
            self.gate.wait(30)
        step = Step(
            index=1, thought="", action="p99_ms", args={"service": "order"}, observation=OBSERVATION, status="ok"
        )
        if on_step:
            on_step(step)
        return Trace(
            trace_id="pb1",
            question=question.text,
            protocol="playbook",
            steps=(step,),
            answer=ANSWER,
            complete=True,
            stop_reason=StopReason.FINISH,
            totals=Totals(steps=1, tool_calls=1),
        )
