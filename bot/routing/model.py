"""The learned intent classifier at serving time: a linear model over hashed n-grams, scored in pure Python.

The model's classes are the request kinds (what the person asks for: investigate, lookup, list, explain, write,
chat, help, command), and a route's probability is the sum of its requests': "write a post-mortem" and "hi" both
route to chitchat without having to share its weights. A model whose classes are the routes themselves (trained
before the request kinds) still serves.

The artifact (bot/routing/model/intent-v3.bin, written by `opsbot intent train`) is one JSON header line (version,
the route names, the request kinds and the route of each, the FeatureSpec, one bias per class, meta, the bucket
count), then the used feature buckets (sorted uint32) and, per bucket, one float32 weight per class, both
little-endian. Not compressed (git and wheels compress it anyway; unzipping cost more than the rest of the load): a
fresh process reads the arrays as they are, never parsing them or copying them into a dict, and finds a bucket by
bisection; loading takes a few milliseconds. Scoring is a sparse dot product and a softmax: no numpy, no
scikit-learn, well under a millisecond per message. Version-1 (gzipped JSON with base64 blobs) and version-2 (route
classes) artifacts still load, for a retrained model named by a setting, and so does a gzipped one.
"""

from __future__ import annotations

import json
import math
import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from bot.routing.features import FeatureSpec, features_from_text

ARTIFACT_VERSION = 3
READS_VERSIONS = (1, 2, 3)
DEFAULT_ARTIFACT = "intent-v3.bin"
GZIP_MAGIC = b"\x1f\x8b"
SHIPPED = Path(__file__).with_name("model") / DEFAULT_ARTIFACT  # package data (pyproject.toml ships model/*)


@dataclass(frozen=True)
class Scores:
    """Route probabilities for one message, best first; a request model's request probabilities, best first."""

    ranked: tuple[tuple[str, float], ...]
    requests: tuple[tuple[str, float], ...] = ()

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
    """Linear softmax over its classes: the request kinds `requests` (each standing for the route at the same place
    in `request_routes`), or, without them, the routes. Weights sit in one flat float array, a row per bucket (one
    weight per class), in the order of the sorted `buckets` array."""

    def __init__(
        self,
        routes: Sequence[str],
        spec: FeatureSpec,
        bias: Sequence[float],
        weights: Mapping[int, Sequence[float]],
        *,
        meta: Mapping[str, Any] | None = None,
        requests: Sequence[str] = (),
        request_routes: Sequence[str] = (),
    ) -> None:
        if len(requests) != len(request_routes) or not set(request_routes) <= set(routes):
            raise ValueError("every request kind needs one of the model's routes")
        self.routes = tuple(routes)
        self.requests = tuple(requests)
        self.request_routes = tuple(request_routes)
        self.spec = spec
        self.bias = tuple(bias)
        self.meta = dict(meta or {})
        self._buckets = array("I", sorted(weights))
        self._flat = array("d")
        for bucket in self._buckets:
            self._flat.extend(weights[bucket])

    @property
    def feature_count(self) -> int:
        return len(self._buckets)

    @property
    def classes(self) -> tuple[str, ...]:
        return self.requests or self.routes

    def scores(self, text: str) -> Scores:
        """Softmax probabilities of every class for `text`; with request classes, each route's is its requests'
        sum."""
        width = len(self.bias)
        logits = list(self.bias)
        flat, buckets, count = self._flat, self._buckets, len(self._buckets)
        for bucket, value in features_from_text(text, self.spec).items():
            row = bisect_left(buckets, bucket)
            if row < count and buckets[row] == bucket:
                offset = row * width
                for k in range(width):
                    logits[k] += flat[offset + k] * value
        top = max(logits)
        exps = [math.exp(x - top) for x in logits]
        total = sum(exps)
        if not self.requests:
            return Scores(_ranked(zip(self.routes, (e / total for e in exps), strict=True)))
        requests = [(request, e / total) for request, e in zip(self.requests, exps, strict=True)]
        pooled = dict.fromkeys(self.routes, 0.0)
        for route, (_, p) in zip(self.request_routes, requests, strict=True):
            pooled[route] += p
        return Scores(_ranked(pooled.items()), _ranked(requests))

    def to_bytes(self) -> bytes:
        """The artifact: the JSON header line, then the buckets and the float32 weights."""
        header = {
            "version": ARTIFACT_VERSION,
            "routes": list(self.routes),
            **({"requests": list(self.requests), "request_routes": list(self.request_routes)} if self.requests else {}),
            "features": self.spec.to_dict(),
            "bias": [round(b, 6) for b in self.bias],
            "meta": self.meta,
            "buckets": len(self._buckets),
        }
        line = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")  # no raw newline
        return line + b"\n" + _little_endian(self._buckets) + _little_endian(array("f", self._flat))

    @classmethod
    def from_bytes(cls, payload: bytes) -> IntentModel:
        """A model from an artifact's payload, version 3 or 2 (or a version-1 JSON document)."""
        line, _, body = payload.partition(b"\n")
        header = json.loads(line)
        version = header.get("version")
        if version not in READS_VERSIONS:
            raise ValueError(f"intent model version {version!r}, this opsbot reads {READS_VERSIONS}")
        if version == 1:
            return _from_v1(header)
        count = int(header["buckets"])
        buckets = _from_little_endian("I", memoryview(body)[: count * 4])
        flat = _from_little_endian("f", memoryview(body)[count * 4 :])
        return cls._from_arrays(header, buckets, flat)

    @classmethod
    def _from_arrays(cls, header: Mapping[str, Any], buckets: array[int], flat: array[float]) -> IntentModel:
        routes, requests = header["routes"], header.get("requests", ())
        if len(flat) != len(buckets) * len(requests or routes) or len(header["bias"]) != len(requests or routes):
            raise ValueError("intent model weights do not match its buckets and classes")
        model = cls(
            routes,
            FeatureSpec.from_dict(header["features"]),
            header["bias"],
            {},
            meta=header.get("meta"),
            requests=requests,
            request_routes=header.get("request_routes", ()),
        )
        model._buckets, model._flat = buckets, flat  # float32 as stored: each weight reads as the same double
        return model


def _ranked(pairs: Iterable[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(pairs, key=lambda pair: -pair[1]))


def _from_v1(data: Mapping[str, Any]) -> IntentModel:
    """A version-1 artifact: base64 blobs of sorted buckets and float32 weights inside the JSON document."""
    import base64  # only for an artifact written before version 2

    buckets = _from_little_endian("I", base64.b64decode(data["buckets"]))
    return IntentModel._from_arrays(data, buckets, _from_little_endian("f", base64.b64decode(data["weights"])))


def _little_endian(values: array[Any]) -> bytes:
    """The same bytes on every machine."""
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _from_little_endian(typecode: str, data: bytes | memoryview) -> array[Any]:
    values = array(typecode)
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def save_model(model: IntentModel, path: Path) -> int:
    """Write the artifact (deterministic bytes: the same model, the same file); returns its size."""
    blob = model.to_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return len(blob)


def load_model(path: Path | None = None) -> IntentModel:
    """The artifact at `path` (gzipped or not), or the one shipped in the package."""
    blob = Path(path or SHIPPED).read_bytes()
    if blob.startswith(GZIP_MAGIC):  # version 1, or a version-2 artifact someone compressed
        blob = zlib.decompress(blob, wbits=16 + zlib.MAX_WBITS)
    return IntentModel.from_bytes(blob)


@cache
def shipped_model() -> IntentModel:
    """The packaged artifact, loaded once per process."""
    return load_model()
