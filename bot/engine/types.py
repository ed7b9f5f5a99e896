"""The agent's vocabulary: frozen dataclasses shared by the loop, the playbook, the surfaces and the store."""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # the tools' data types load with the first tool result, not with the engine's vocabulary
    from tools.base import ToolData

log = logging.getLogger(__name__)

StepStatus = Literal["ok", "error", "no_data", "format_error", "refused"]
Route = Literal["diagnose", "lookup", "chitchat", "help", "act"]
# What the person asks the bot to do; the route follows from it (bot/routing/intent.py): a write request is answered
# once, never by the loop. "" where it is not known (a surface's own choice, a trace stored before requests were read).
Request = Literal["investigate", "lookup", "list", "explain", "write", "chat", "help", "command", ""]
Protocol = Literal["text", "native", "playbook", "single"]


class StopReason(StrEnum):
    """Why a run ended. Only FINISH means the model (or playbook) concluded on its own."""

    FINISH = "finish"
    MAX_STEPS = "max_steps"
    TIME_BUDGET = "time_budget"
    TOKEN_BUDGET = "token_budget"
    REPEATED_ACTION = "repeated_action"
    FORMAT_ERRORS = "format_errors"
    LLM_UNAVAILABLE = "llm_unavailable"
    INTERRUPTED = "interrupted"  # the process running it stopped (restart, crash); the steps kept are partial


@dataclass(frozen=True)
class Question:
    """What the user asked, where, and what the thread already established."""

    text: str
    user: str = ""
    channel: str = ""
    thread_ts: str = ""
    source: str = "cli"  # slack | api | alertmanager | cli | eval
    history: tuple[str, ...] = ()  # compressed thread memory, oldest first
    intent: Intent | None = None  # already classified by the surface (Slack's quick lane, a "Just answer" click)
    # The surface runs full diagnoses on a lane of its own (Slack): a lookup that would turn into one hands the
    # question back instead (a note starting with HANDED_BACK says why), and `escalated` carries that why to the run.
    quick_only: bool = False
    escalated: str = ""
    # Facts opsbot attached before the first step, shown with the question (the services it knows, when the
    # question names none), so the model does not spend a step finding them.
    known: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolCall:
    name: str
    args: Mapping[str, Any]
    call_id: str = ""


@dataclass(frozen=True)
class Step:
    """One Thought -> Action -> Observation round, as traced and as shown in Slack."""

    index: int
    thought: str
    action: str  # tool name, "finish", or "" when the reply could not be read
    args: Mapping[str, Any]
    observation: str
    status: StepStatus
    elapsed_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # What the tool's observation was rendered from (tools/results.py reads it): None for a step that ran no
    # tool, a tool error, and a text-only (MCP) tool.
    data: ToolData | None = None


@dataclass(frozen=True)
class Totals:
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    elapsed_ms: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    format_errors: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Intent:
    route: Route
    confidence: float
    tier: Literal["rules", "classifier", "model", "default"]
    reason: str
    # the learned classifier's probability that the message asks for an investigation, whichever tier decided
    # (0.0 when no classifier scored it): a quick answer to a likely diagnosis offers "🔎 Investigate"
    diagnose_probability: float = 0.0
    request: Request = ""
    # a smaller request the text also carries (write, lookup or explain) when it is routed to diagnose: with a model
    # configured, the cheap model confirms the investigation before the loop starts
    also: Request = ""
    # what that confirmation cost (0 when none ran); the Router adds it to the trace's totals too
    confirm_prompt_tokens: int = 0
    confirm_completion_tokens: int = 0
    confirm_ms: int = 0

    @property
    def unsure(self) -> bool:
        """Neither the classifier nor the cheap model was sure: a surface may ask the user before investigating."""
        return self.tier == "default"


@dataclass(frozen=True)
class Budget:
    """The loop's gates; wiring builds it from Settings.agent."""

    max_steps: int = 8
    time_budget_s: float = 90.0
    token_budget: int = 48_000
    max_format_errors: int = 3
    max_args_chars: int = 2_000
    parallel_tools: bool = False


@dataclass(frozen=True)
class Trace:
    trace_id: str
    question: str
    protocol: Protocol
    steps: tuple[Step, ...]
    answer: str
    complete: bool
    stop_reason: StopReason
    totals: Totals
    started_at: str = ""  # ISO 8601, UTC
    model: str = ""
    intent: Intent | None = None
    notes: tuple[str, ...] = field(default=())  # e.g. "LLM unavailable: ...", "unverified: 42 ms"
    # What CONFIRMED the cause, from tool evidence only (bot/playbook/confirmation.py); "" for a likely cause
    confirmed_by: str = ""


StepObserver = Callable[[Step], None]
HANDED_BACK = "handed back for the full diagnosis: "  # the note on a quick_only answer that needs a diagnosis


def handed_back(trace: Trace) -> str:
    """Why a quick_only answer handed its question back for the full diagnosis ("" when it answered it)."""
    return next((n.removeprefix(HANDED_BACK) for n in trace.notes if n.startswith(HANDED_BACK)), "")


Responder = Callable[[Question, StepObserver | None], Trace]  # what every surface calls: question in, trace out

INTERNAL_ERROR_ANSWER = (
    "Sorry, I hit an internal error while answering and have no conclusion. The error is logged; "
    "please try again, or check the dashboards directly."
)


def new_trace_id() -> str:
    """The one trace-id format: 32 lowercase hex characters (a uuid4)."""
    return uuid.uuid4().hex


def trace_from_answer(
    question: Question,
    answer: str,
    *,
    complete: bool = True,
    stop_reason: StopReason = StopReason.FINISH,
    intent: Intent | None = None,
    elapsed_ms: int = 0,
    notes: tuple[str, ...] = (),
) -> Trace:
    """The trace of an answer that took no step: help, a canned reply, or a labelled failure."""
    return Trace(
        trace_id=new_trace_id(),
        question=question.text,
        protocol="single",
        steps=(),
        answer=answer,
        complete=complete,
        stop_reason=stop_reason,
        totals=Totals(elapsed_ms=elapsed_ms),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        intent=intent,
        notes=notes,
    )


def internal_error_trace(
    question: Question, exc: BaseException, *, intent: Intent | None = None, elapsed_ms: int = 0
) -> Trace:
    """The answer when something nobody anticipated broke: labelled partial; the details go to the log."""
    # no stop reason fits an internal error: complete=False and the note label it
    return trace_from_answer(
        question,
        INTERNAL_ERROR_ANSWER,
        complete=False,
        intent=intent,
        elapsed_ms=elapsed_ms,
        notes=(f"internal error: {type(exc).__name__}",),
    )


def trace_to_dict(trace: Trace) -> dict[str, Any]:
    """JSON-ready form: the trace's fields, the stop reason as its value, and totals.tokens added; a step's data in
    its tagged form (tools/resultjson.py), and no `data` key on a step without any."""
    data = _finite(asdict(replace(trace, steps=tuple(replace(s, data=None) for s in trace.steps))))
    data["stop_reason"] = trace.stop_reason.value
    data["totals"]["tokens"] = trace.totals.tokens
    for step, stored in zip(trace.steps, data["steps"], strict=True):
        del stored["data"]
        if step.data is not None and (kept := _stored_data(step.data)) is not None:
            stored["data"] = kept
    return data


def _stored_data(value: ToolData) -> dict[str, Any] | None:
    from tools.resultjson import data_to_json

    try:
        return data_to_json(value)
    except (TypeError, ValueError) as exc:  # a trace is kept without the data rather than not kept
        log.warning("a step's %s data is not stored: %s", type(value).__name__, exc)
        return None


def _finite(value: Any) -> Any:
    """NaN and ±Infinity (a model may send `1e999` as an argument) become None: the dict stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def trace_from_dict(data: Mapping[str, Any]) -> Trace:
    """Inverse of trace_to_dict; tolerates missing optional keys from older stored traces."""
    totals = {k: v for k, v in dict(data.get("totals") or {}).items() if k != "tokens"}
    intent = data.get("intent")
    return Trace(
        trace_id=data["trace_id"],
        question=data["question"],
        protocol=data["protocol"],
        steps=tuple(_step_from_dict(s) for s in data.get("steps", ())),
        answer=data.get("answer", ""),
        complete=bool(data.get("complete", False)),
        stop_reason=StopReason(data.get("stop_reason", StopReason.FINISH)),
        totals=Totals(**totals),
        started_at=data.get("started_at", ""),
        model=data.get("model", ""),
        intent=Intent(**intent) if intent else None,
        notes=tuple(data.get("notes", ())),
        confirmed_by=str(data.get("confirmed_by") or ""),
    )


def _step_from_dict(stored: Mapping[str, Any]) -> Step:
    """A stored step; its data read back by kind (tools/resultjson.py), None when it has none (an older trace) or
    when it no longer reads (a kind this version does not know): the observation text is still there."""
    fields = dict(stored)
    raw = fields.pop("data", None)
    return Step(**fields, data=_data_from_stored(raw) if raw else None)


def _data_from_stored(raw: Mapping[str, Any]) -> ToolData | None:
    from tools.resultjson import data_from_json

    try:
        return data_from_json(raw)
    except ValueError as exc:
        log.warning("a stored step's data is not read back: %s", exc)
        return None
