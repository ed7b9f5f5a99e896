"""The learned intent classifier at serving time: a linear model over hashed n-grams, scored in pure Python.

The artifact (bot/routing/model/intent-v1.json.gz, written by `opsbot intent train`) holds the route names, the
FeatureSpec, one bias per route and, per used feature bucket, one float32 weight per route. Scoring is a sparse dot
product and a softmax: no numpy, no scikit-learn, well under a millisecond per message.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import sys
from array import array
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any

from bot.routing.features import FeatureSpec, features_from_text

ARTIFACT_VERSION = 1
DEFAULT_ARTIFACT = "intent-v1.json.gz"


@dataclass(frozen=True)
class Scores:
    """Route probabilities for one message, best first."""

    ranked: tuple[tuple[str, float], ...]

    @property
    def route(self) -> str:
        return self.ranked[0][0]

    @property
    def probability(self) -> float:
        return self.ranked[0][1]

    @property
    def runner_up(self) -> tuple[str, float]:
        return self.ranked[1] if len(self.ranked) > 1 else ("", 0.0)


class IntentModel:
    """Linear softmax over routes. Weights sit in one flat float array, one row per bucket in `_buckets` order.

    The buckets are a sorted uint32 array searched by bisection, not a dict: 40k buckets as a dict of ints cost
    ~5 MB resident in every process that classifies; as an array, 160 KB. A loaded artifact keeps its float32
    weights (read as the same doubles the float64 copy held), half the memory of a float64 copy.
    """

    def __init__(self, routes: Sequence[str], spec: FeatureSpec, bias: Sequence[float],
                 weights: Mapping[int, Sequence[float]], *, meta: Mapping[str, Any] | None = None) -> None:
        self.routes = tuple(routes)
        self.spec = spec
        self.bias = tuple(bias)
        self.meta = dict(meta or {})
        self._buckets = array("I", sorted(weights))
        self._flat: array[float] = array("d")
        for bucket in self._buckets:
            self._flat.extend(weights[bucket])

    @property
    def feature_count(self) -> int:
        return len(self._buckets)

    def _offset(self, bucket: int) -> int | None:
        """Where the bucket's row starts in the flat weights, or None when the model never saw it."""
        i = bisect_left(self._buckets, bucket)
        return i * len(self.routes) if i < len(self._buckets) and self._buckets[i] == bucket else None

    def scores(self, text: str) -> Scores:
        """Softmax probabilities of every route for `text`."""
        width = len(self.routes)
        logits = list(self.bias)
        flat = self._flat
        for bucket, value in features_from_text(text, self.spec).items():
            offset = self._offset(bucket)
            if offset is not None:
                for k in range(width):
                    logits[k] += flat[offset + k] * value
        top = max(logits)
        exps = [math.exp(x - top) for x in logits]
        total = sum(exps)
        ranked = sorted(zip(self.routes, (e / total for e in exps), strict=True), key=lambda rp: -rp[1])
        return Scores(tuple(ranked))

    def to_dict(self) -> dict[str, Any]:
        """The artifact's JSON. Buckets (uint32) and weights (float32, one row per bucket) are base64 blobs, so a
        fresh process loads 20k+ buckets in milliseconds instead of parsing 100k+ JSON numbers."""
        return {"version": ARTIFACT_VERSION, "routes": list(self.routes), "features": self.spec.to_dict(),
                "bias": [round(b, 6) for b in self.bias], "meta": self.meta,
                "buckets": _blob(self._buckets), "weights": _blob(array("f", self._flat))}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IntentModel:
        if data.get("version") != ARTIFACT_VERSION:
            raise ValueError(f"intent model version {data.get('version')!r}, this opsbot reads {ARTIFACT_VERSION}")
        routes = data["routes"]
        buckets, flat = _unblob("I", data["buckets"]), _unblob("f", data["weights"])
        if len(flat) != len(buckets) * len(routes):
            raise ValueError("intent model weights do not match its buckets and routes")
        if any(a >= b for a, b in pairwise(buckets)):  # bisection needs them ascending, as to_dict writes them
            raise ValueError("intent model buckets are not sorted")
        model = cls(routes, FeatureSpec.from_dict(data["features"]), data["bias"], {}, meta=data.get("meta"))
        model._buckets, model._flat = buckets, flat
        return model


def _blob(values: array[Any]) -> str:
    """Little-endian bytes, base64: the same artifact on every machine."""
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def _unblob(typecode: str, text: str) -> array[Any]:
    values = array(typecode)
    values.frombytes(base64.b64decode(text))
    if sys.byteorder != "little":
        values.byteswap()
    return values


def save_model(model: IntentModel, path: Path) -> int:
    """Write the gzipped JSON artifact (deterministic bytes: no timestamp in the gzip header); returns its size."""
    payload = json.dumps(model.to_dict(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = gzip.compress(payload, compresslevel=9, mtime=0)
    path.write_bytes(blob)
    return len(blob)


def load_model(path: Path | None = None) -> IntentModel:
    """The artifact at `path`, or the one shipped in the package."""
    if path is None:
        blob = resources.files("bot.routing").joinpath("model", DEFAULT_ARTIFACT).read_bytes()
    else:
        blob = Path(path).read_bytes()
    return IntentModel.from_dict(json.loads(gzip.decompress(blob)))


@cache
def shipped_model() -> IntentModel:
    """The packaged artifact, loaded once per process."""
    return load_model()
