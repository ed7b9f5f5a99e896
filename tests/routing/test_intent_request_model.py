"""A classifier over the request kinds: a route's probability is its requests' sum, the likeliest request names the
request within the route, and a doubted investigation is confirmed by the cheap model; a model over routes still
serves."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bot.routing.features import FeatureSpec
from bot.routing.intent import CONFIRM_BELOW, REQUEST_ROUTES, classify, needs_confirmation
from bot.routing.model import IntentModel, load_model, save_model
from bot.routing.scorecard import ROUTES, Example
from bot.routing.training import TrainOptions, request_label, train_model

REQUESTS = tuple(REQUEST_ROUTES)


def _model(bias: dict[str, float]) -> IntentModel:
    """A request model with no feature weights: its scores are its biases' alone, the same for every text."""
    return IntentModel(
        ROUTES,
        FeatureSpec(),
        [bias.get(r, -5.0) for r in REQUESTS],
        {7: [0.0] * len(REQUESTS)},
        requests=REQUESTS,
        request_routes=[REQUEST_ROUTES[r] for r in REQUESTS],
    )


def test_a_routes_probability_is_the_sum_of_its_requests() -> None:
    bias = {"investigate": 1.0, "write": 0.8, "chat": 0.6, "explain": 0.1}
    scores = _model(bias).scores("anything")
    total = sum(math.exp(bias.get(r, -5.0)) for r in REQUESTS)
    requests = {r: math.exp(bias.get(r, -5.0)) / total for r in REQUESTS}
    assert dict(scores.requests) == pytest.approx(requests)
    assert dict(scores.ranked)["chitchat"] == pytest.approx(requests["write"] + requests["chat"] + requests["explain"])
    assert scores.route == "chitchat" and scores.requests[0][0] == "investigate"  # no single request outweighs it


def test_a_request_model_round_trips_and_a_route_model_still_loads(tmp_path: Path) -> None:
    model = _model({"investigate": 0.7, "lookup": 0.1})
    save_model(model, tmp_path / "m.bin")
    again = load_model(tmp_path / "m.bin")
    assert (again.requests, again.request_routes) == (model.requests, model.request_routes)
    assert again.to_bytes() == model.to_bytes() and again.scores("why") == model.scores("why")
    by_route = IntentModel(ROUTES, FeatureSpec(), [0.2, 0, 0, 0, 0], {9: [0.5, 0.0, 0.0, 0.0, 0.0]})
    line, _, body = by_route.to_bytes().partition(b"\n")
    (tmp_path / "v2.bin").write_bytes(line.replace(b'"version":3', b'"version":2') + b"\n" + body)
    v2 = load_model(tmp_path / "v2.bin")
    assert v2.requests == () and v2.scores("why") == by_route.scores("why") and v2.scores("why").requests == ()
    with pytest.raises(ValueError, match="route"):
        IntentModel(ROUTES, FeatureSpec(), [0.0], {}, requests=["write"], request_routes=["nowhere"])


SMALL = [
    Example("why is order slow", "diagnose", request="investigate"),
    Example("checkout throws 500s, dig in", "diagnose", request="investigate"),
    Example("order p99 now?", "lookup"),
    Example("list the deploys of cart today", "lookup"),
    Example("write the post-mortem, the cause was a cert", "chitchat", request="write"),
    Example("what does p99 mean", "chitchat"),
    Example("thanks!", "chitchat"),
    Example("help", "help"),
    Example("restart order", "act"),
]


def test_training_learns_each_lines_request_or_what_its_route_and_cues_stand_for() -> None:
    assert [request_label(e) for e in SMALL] == [
        "investigate",
        "investigate",
        "lookup",
        "list",
        "write",
        "explain",
        "chat",
        "help",
        "command",
    ]
    model = train_model(SMALL, TrainOptions(diagnose_shift=0.0))
    assert model.requests == REQUESTS and model.meta["by_request"] is True
    shifted = train_model(SMALL, TrainOptions(diagnose_shift=0.5))
    moved = [b - a for a, b in zip(model.bias, shifted.bias, strict=True)]
    assert moved == pytest.approx([0.5 if r == "investigate" else 0.0 for r in REQUESTS])  # the shift: diagnose's
    scores = model.scores("write the post-mortem for the checkout outage")
    assert sum(p for _, p in scores.requests) == pytest.approx(1) and scores.requests[0][0] == "write"
    assert train_model(SMALL, TrainOptions(by_request=False)).requests == ()  # a model over the routes


def test_the_likeliest_request_names_the_request_and_a_doubted_investigation_is_confirmed() -> None:
    doubting = _model({"investigate": 2.0, "write": 1.6})
    assert dict(doubting.scores("x").requests)["investigate"] < CONFIRM_BELOW
    intent = classify("checkout was down for an hour", model=doubting)  # no cue asks for anything smaller
    assert (intent.route, intent.request, intent.also) == ("diagnose", "investigate", "write")
    assert needs_confirmation(intent)
    plain = classify("checkout is down, why?", model=_model({"investigate": 4.0}))
    assert plain.also == "" and not needs_confirmation(plain)
    lists = _model({"list": 2.0, "lookup": 1.0})
    assert classify("cart deploys today", model=lists).request == "list"  # no list cue: the classifier says so
