"""👎-voted messages as lines to review for retraining the intent gate, each with a suggested label.

A 👎 on an answer says the route was wrong far more often than which route was right, but the costly confusion is
diagnose versus the rest: a needless investigation, or a missed one. So the suggestion flips that side: a message
the gate sent to diagnose is suggested as the classifier's best non-diagnosis route, any other as diagnose. It is a
suggestion, never a label: `route` stays empty until a person fills it, or until `opsbot intent train
--accept-suggestions` takes the suggestion for lines nobody labelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.engine.types import Trace
from bot.routing.model import IntentModel

REVIEW_KIND = "feedback"


def suggested_route(text: str, routed_as: str, model: IntentModel | None) -> str:
    """The route a 👎 most likely means: diagnose <-> not diagnose ("" when the route is unknown)."""
    if not routed_as:
        return ""
    if routed_as != "diagnose":
        return "diagnose"
    if model is None:
        return "chitchat"
    return next(route for route, _ in model.scores(text).ranked if route != "diagnose")


def review_line_from_trace(trace: Trace, model: IntentModel | None) -> dict[str, Any]:
    """A corpus-shaped line for a 👎-voted trace: `route` empty, the gate's choice and a marked suggestion."""
    intent = trace.intent
    routed_as = intent.route if intent else ""
    lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in trace.question) else "en"
    return {
        "text": trace.question,
        "route": "",
        "lang": lang,
        "kind": REVIEW_KIND,
        "split": "train",
        "routed_as": routed_as,
        "tier": intent.tier if intent else "",
        "probability": round(intent.confidence, 3) if intent else None,
        "suggested_route": suggested_route(trace.question, routed_as, model),
        "trace_id": trace.trace_id,
    }


def labelled_line(line: Mapping[str, Any], *, accept_suggestions: bool) -> dict[str, Any] | None:
    """A reviewed line as training data: its own route, else (when accepted) its suggestion; None if neither."""
    route = str(line.get("route") or "")
    if not route and accept_suggestions:
        route = str(line.get("suggested_route") or "")
    if not route:
        return None
    return {**line, "route": route, "split": "train"}
