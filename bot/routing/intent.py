"""The intent gate: only a real investigation pays for the ReAct loop.

The Intent carries the route and what the person asks for (the request): investigate -> diagnose, lookup and list
-> lookup, explain, write and chat -> chitchat (one answer, never the loop), help -> help, command -> act. The
request within a route is the classifier's most likely request kind for that route (or, for a model trained on routes,
read from the request cues of bot/routing/lexicon.py). A message routed to diagnose that also asks for something
smaller (a text to write, one value, an explanation: in its cues, or because the classifier doubts the investigation)
says so in `also`, so the Router can have the cheap model confirm it before the loop starts.

Three tiers. Rules take only the trivial cases (an empty or wordless message). A learned classifier (bot/routing/
model.py: a linear model over character and word n-grams and cues in six languages whose classes are the request
kinds, trained by `opsbot intent train`) routes the rest. The cheap model is asked only when the classifier's
probability is below `unsure_below`; when it is not configured or fails, the classifier's best guess is used,
labelled tier "default" with its low probability, so a surface can ask the user instead of investigating.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast, get_args

from bot.engine.types import Intent, Request, Route, Trace
from bot.routing.cues import LEXICON
from bot.routing.features import cue_names, plain_from_slack
from bot.routing.model import IntentModel, Scores, shipped_model
from bot.safety.inbound import has_request_text, visible_text

if TYPE_CHECKING:  # the adapter imports openai (seconds on a cold start); the gate only calls what it is given
    from bot.engine.llm import LLM

log = logging.getLogger(__name__)

# Text with no letter, digit or CJK character (emoji, punctuation): nothing for a classifier to read.
_WORDLESS = re.compile(r"^[^\w\u4e00-\u9fff]*$")
_QUESTION_MARK = re.compile(r"[?？]")
_ROUTES: tuple[str, ...] = get_args(Route)
REQUEST_ROUTES: dict[str, Route] = {
    "investigate": "diagnose",
    "lookup": "lookup",
    "list": "lookup",
    "explain": "chitchat",
    "write": "chitchat",
    "chat": "chitchat",
    "help": "help",
    "command": "act",
}
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+")
# The classifier doubts an investigation below this probability of "investigate": the cheap model, when configured,
# confirms it first. Leave-one-writer-out over 13 writer groups: with the cues, below 0.7 flags 45 of the 75 needless
# investigations for 136 of the 1,896 real ones (a ~450-token call each, against ~20k tokens of a needless loop); the
# cues alone, 9 for 54; below 0.6, 32 for 92; below 0.8, 55 for 173. Over 17 groups (the outside writers joined, the
# fourth lexicon edition): with the cues, below 0.7 flags 47 of 83 for 189 of 2,375; below 0.6, 37 for 151; below
# 0.8, 66 for 234; the cues alone, 13 for 114. Over 19 groups (two more outside writers, the fifth edition, shift 0.0):
# below 0.7 flags 42 of 74 for 211 of 2,611; below 0.6, 32 for 172; below 0.8, 61 for 260; the cues alone, 13 for 134.
CONFIRM_BELOW = 0.7


def cjk_spaced(text: str) -> str:
    """Runs of CJK characters set apart by spaces: Python's \\b counts them as word characters, so "order的p99"
    would otherwise name neither order nor p99."""
    return _CJK.sub(lambda m: f" {m[0]} ", text)


def classify(
    text: str, llm: LLM | None = None, *, unsure_below: float = 0.6, model: IntentModel | None = None
) -> Intent:
    """Route a message: rules for the trivial cases, then the learned classifier, the cheap model only when the
    classifier's probability is below `unsure_below`; when neither is sure, tier "default" says so."""
    trivial = _by_rules(plain_from_slack(text))
    if trivial is not None:
        return trivial
    active = model or shipped_or_none()
    scores = active.scores(text) if active is not None else None
    edition = active.spec.lexicon if active is not None else LEXICON
    routed = _with_request(_by_classifier_or_model(text, scores, llm, unsure_below), text, scores, edition)
    return replace(routed, diagnose_probability=dict(scores.ranked).get("diagnose", 0.0)) if scores else routed


def _with_request(intent: Intent, text: str, scores: Scores | None, edition: int) -> Intent:
    """The intent with its request (unless the model named one that fits the route) and, for an investigation, the
    smaller request its text also carries."""
    asked = _asked_in(text, edition)
    request = intent.request
    if REQUEST_ROUTES.get(request) != intent.route:
        request = _likeliest_request(intent.route, scores) or request_of(intent.route, asked)
    also = (also_asked(asked) or _doubted(scores)) if intent.route == "diagnose" else ""
    return replace(intent, request=request, also=also)


def _likeliest_request(route: str, scores: Scores | None) -> Request:
    """The classifier's likeliest request kind for `route` ("" for a model trained on routes)."""
    fitting = [request for request, _ in scores.requests if REQUEST_ROUTES.get(request) == route] if scores else []
    return cast(Request, fitting[0]) if fitting else ""


def _doubted(scores: Scores | None) -> Request:
    """The classifier's likeliest other request when it doubts an investigation ("" when it does not)."""
    if scores is None or not scores.requests or dict(scores.requests).get("investigate", 1.0) >= CONFIRM_BELOW:
        return ""
    return cast(Request, next(request for request, _ in scores.requests if request != "investigate"))


def _asked_in(text: str, edition: int | None = None) -> frozenset[str]:
    """The cues of the lexicon edition the serving model reads (its features have compiled them already; another
    edition would compile a second set on the first message), the newest without a model."""
    if edition is None:
        active = shipped_or_none()
        edition = active.spec.lexicon if active is not None else LEXICON
    return frozenset(cue_names(text, True, edition))  # positional, as the features call it: one cache entry


def request_of(route: str, asked: frozenset[str]) -> Request:
    """The request a route stands for, told apart within lookup (a list) and chitchat (a text to write, a term or an
    alert to explain) by the request cues."""
    if route == "lookup":
        return "list" if "list" in asked else "lookup"
    if route == "chitchat":
        if "write" in asked:
            return "write"
        return "explain" if "concept" in asked or "alert+question" in asked else "chat"
    return {"diagnose": "investigate", "help": "help", "act": "command"}.get(route, "")  # type: ignore[return-value]


def also_asked(asked: frozenset[str]) -> Request:
    """A smaller request inside a message routed to diagnose: a text to write, an investigation declined or scoped
    to one value, a cause already known, one value of a past window, an alert or a term to explain, venting,
    laughter, or an alert the writer says they have taken; the bot's own run stopped (fifth edition)."""
    if "halt" in asked:
        return "command"
    if "write" in asked:
        return "write"
    if asked & {"no_dig", "only", "known", "past_value", "for_text"}:
        return "lookup"
    if "concept" in asked and "why" not in asked:
        return "explain"
    return "chat" if asked & {"vent", "laugh", "taken"} else ""


def _by_classifier_or_model(text: str, scores: Scores | None, llm: LLM | None, unsure_below: float) -> Intent:
    if scores is not None and scores.probability >= unsure_below:
        return Intent(cast(Route, scores.route), scores.probability, "classifier", _scores_reason(scores))
    guess = _scores_reason(scores) if scores is not None else "no classifier artifact"
    if llm is not None:
        try:
            return _by_model(text, llm, guess)
        except ValueError as exc:  # the model answered, but not with a route: say that, not "unavailable"
            log.warning("intent model answered without a usable route, using the classifier's guess: %s", exc)
            why = f"the model answered, but {exc}"
        except Exception as exc:  # LLMUnavailable or an adapter bug: any model failure must still route the message
            log.warning("intent model unavailable, using the classifier's guess: %s", exc)
            why = f"model unavailable ({type(exc).__name__})"
    else:
        why = "no model configured"
    route: Route = cast(Route, scores.route) if scores is not None else "diagnose"
    probability = scores.probability if scores is not None else 0.0
    return Intent(route, probability, "default", f"classifier unsure ({guess}); {why}; using {route}")


def _by_rules(plain: str) -> Intent | None:
    """Only what needs no classifier: an empty message gets the help, a wordless one (emoji, "?") a reply."""
    if not visible_text(plain).strip():  # nothing but spaces or invisible characters: usage, never the model
        return Intent("help", 1.0, "rules", "empty message", request="help")
    if _WORDLESS.match(plain) or not has_request_text(plain):
        asks_help = bool(_QUESTION_MARK.search(plain))
        return Intent(
            "help" if asks_help else "chitchat",
            1.0,
            "rules",
            "no words (emoji or punctuation only)",
            request="help" if asks_help else "chat",
        )
    return None


def _scores_reason(scores: Scores) -> str:
    runner, p = scores.runner_up
    return f"classifier: {scores.route} {scores.probability:.2f}, next {runner} {p:.2f}"


def shipped_or_none() -> IntentModel | None:
    """The packaged model; a missing or unreadable artifact is logged and the gate runs without it."""
    try:
        return shipped_model()
    except (OSError, ValueError, KeyError) as exc:
        log.error("intent classifier artifact unreadable, routing without it: %s", exc)
        return None


def _by_model(text: str, llm: LLM, guess: str) -> Intent:
    from bot.engine.prompts import load_prompt  # importlib.resources: only when the model is asked

    messages = [{"role": "system", "content": load_prompt("intent")}, {"role": "user", "content": text}]
    reply = llm.complete(messages, role="cheap", max_tokens=100)
    return intent_from_reply(reply.content, guess)


def needs_confirmation(intent: Intent) -> bool:
    """An investigation the classifier chose (not a person, not the model) for a text that also asks for something
    smaller: the second line of defence asks the cheap model before the loop starts."""
    return intent.route == "diagnose" and bool(intent.also) and intent.tier in ("classifier", "default")


def confirm_investigation(text: str, intent: Intent, llm: LLM) -> Intent:
    """The cheap model's route for a message the classifier sent to diagnose while it also asks for something
    smaller; its cost rides on the returned Intent. A failing model keeps the investigation, saying so."""
    from bot.engine.prompts import load_prompt

    messages = [{"role": "system", "content": load_prompt("intent")}, {"role": "user", "content": text}]
    started = time.monotonic()
    try:
        reply = llm.complete(messages, role="cheap", max_tokens=100)
        decided = intent_from_reply(reply.content, f"{intent.reason}; also asks: {intent.also}")
    except Exception as exc:  # LLMUnavailable, an unusable reply: the classifier's route stands
        log.warning("intent confirmation failed, keeping diagnose: %s", exc)
        spent = int((time.monotonic() - started) * 1000)
        return replace(intent, reason=f"{intent.reason}; unconfirmed ({type(exc).__name__})", confirm_ms=spent)
    spent_ms = int((time.monotonic() - started) * 1000)
    if decided.route == "diagnose":
        decided = replace(intent, reason=f"{intent.reason}; confirmed by the cheap model")
    else:
        request = decided.request or request_of(decided.route, _asked_in(text))
        log.info("the cheap model routed an investigation to %s (%s): %s", decided.route, request, decided.reason)
        decided = replace(decided, request=request, diagnose_probability=intent.diagnose_probability)
    return replace(
        decided,
        confirm_prompt_tokens=reply.prompt_tokens,
        confirm_completion_tokens=reply.completion_tokens,
        confirm_ms=spent_ms,
    )


def with_confirmation_cost(trace: Trace) -> Trace:
    """The trace with its intent's confirmation (tokens and time) counted in its totals, where /metrics reads
    the tokens a run spent outside its steps."""
    intent = trace.intent
    if intent is None or not (intent.confirm_ms or intent.confirm_prompt_tokens):
        return trace
    totals = trace.totals
    counted = replace(
        totals,
        prompt_tokens=totals.prompt_tokens + intent.confirm_prompt_tokens,
        completion_tokens=totals.completion_tokens + intent.confirm_completion_tokens,
        elapsed_ms=totals.elapsed_ms + intent.confirm_ms,
    )
    tokens = intent.confirm_prompt_tokens + intent.confirm_completion_tokens
    note = f"intent confirmed by the cheap model: {intent.route} ({tokens} tokens, {intent.confirm_ms} ms)"
    return replace(trace, totals=counted, notes=(*trace.notes, note))


def intent_from_reply(content: str, guess: str) -> Intent:
    """The cheap model's JSON answer as an Intent (tier "model"); its request is kept when it fits the route.
    Raises ValueError when the reply names no route."""
    parsed = _reply_to_dict(content)
    request = str(parsed.get("request", "")).strip().lower()
    route = str(parsed.get("route", "")).strip().lower() or REQUEST_ROUTES.get(request, "")
    if route not in _ROUTES:
        raise ValueError(f"with an unknown route {route!r}" if route else "not with a JSON route")
    confidence = min(max(float(parsed.get("confidence", 0.7)), 0.0), 1.0)
    reason = str(parsed.get("reason", "")).strip()[:200] or "no reason given"
    fits = cast(Request, request) if REQUEST_ROUTES.get(request) == route else ""
    return Intent(cast(Route, route), confidence, "model", f"model: {reason} ({guess})", request=fits)


def _reply_to_dict(content: str) -> dict[str, Any]:
    start, end = content.find("{"), content.rfind("}")
    candidate = content[start : end + 1] if start >= 0 and end > start else content
    try:
        data = json.loads(candidate)
    except ValueError:
        import json_repair  # ~50 ms of imports: only for a model reply that is not plain JSON

        data = json_repair.loads(candidate)
    if not isinstance(data, dict):
        raise ValueError("not in JSON")
    return data


def intent_to_dict(intent: Intent) -> dict[str, Any]:
    """The JSON line `opsbot classify` prints."""
    line = {
        "route": intent.route,
        "request": intent.request,
        "confidence": round(intent.confidence, 2),
        "tier": intent.tier,
        "reason": intent.reason,
    }
    return {**line, "also": intent.also} if intent.also else line
