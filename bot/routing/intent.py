"""The intent gate: only a real investigation pays for the ReAct loop.

Three tiers. Rules take only the trivial cases (an empty or wordless message). A learned classifier (bot/routing/
model.py: a linear model over character and word n-grams, English and Chinese, trained by `opsbot intent train`)
routes the rest. The cheap model is asked only when the classifier's probability is below `unsure_below`; when it
is not configured or fails, the classifier's best guess is used, labelled tier "default" with its low probability,
so a surface can ask the user instead of investigating.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast, get_args

from bot.engine.types import Intent, Route
from bot.routing.features import plain_from_slack
from bot.routing.model import IntentModel, Scores, shipped_model
from bot.safety.inbound import has_request_text, visible_text

if TYPE_CHECKING:  # the adapter imports openai (seconds on a cold start); the gate only calls what it is given
    from bot.engine.llm import LLM

log = logging.getLogger(__name__)

# Text with no letter, digit or CJK character (emoji, punctuation): nothing for a classifier to read.
_WORDLESS = re.compile(r"^[^\w\u4e00-\u9fff]*$")
_QUESTION_MARK = re.compile(r"[?？]")
_ROUTES: tuple[str, ...] = get_args(Route)
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+")


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
    routed = _by_classifier_or_model(text, scores, llm, unsure_below)
    return replace(routed, diagnose_probability=dict(scores.ranked).get("diagnose", 0.0)) if scores else routed


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
        return Intent("help", 1.0, "rules", "empty message")
    if _WORDLESS.match(plain) or not has_request_text(plain):
        route: Route = "help" if _QUESTION_MARK.search(plain) else "chitchat"
        return Intent(route, 1.0, "rules", "no words (emoji or punctuation only)")
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
    reply = llm.complete(messages, role="cheap", max_tokens=80)
    parsed = _reply_to_dict(reply.content)
    route = str(parsed.get("route", "")).strip().lower()
    if route not in _ROUTES:
        raise ValueError(f"with an unknown route {route!r}" if route else "not with a JSON route")
    confidence = min(max(float(parsed.get("confidence", 0.7)), 0.0), 1.0)
    reason = str(parsed.get("reason", "")).strip()[:200] or "no reason given"
    return Intent(cast(Route, route), confidence, "model", f"model: {reason} ({guess})")


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
    return {
        "route": intent.route,
        "confidence": round(intent.confidence, 2),
        "tier": intent.tier,
        "reason": intent.reason,
    }
