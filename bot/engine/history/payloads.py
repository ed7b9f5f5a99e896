"""Raw backend JSON a tool handed over as it came, rewritten as compact lines, each marked with what it is.

opsbot's own tools render their text from typed data (evidence.py cites it), but a tool from elsewhere (an MCP server,
a plugged-in toolset, a prototype) may return the backend's body: Prometheus `query_range` JSON, where every point
is a `[timestamp, "value"]` pair and costs about 12 tokens, or an Elasticsearch `_search` response, where every hit
repeats its index, id, score and field names. Both are rewritten at render time:
- Prometheus (matrix): per series its labels, the `min · median · max · last` line, the largest level shift as a
  `change:` line (numbers at three significant digits), and about eight evenly spaced points (the shape; their
  spacing said once); a vector is one line per series; an error stays one line;
- Elasticsearch: the total, then the hits grouped by level, service and message alike but for numbers and ids, as
  the logs tool's signatures (`1. 7x ERROR order <message> (first … last)`, whole seconds), biggest group first,
  with one `example:` line of the other fields (a field that differs within the group shows how many values it
  took; one that differs on every hit, an id, is left out);
- git: `git log` and `git show` output, by bot/engine/history/gittext.py.
Each line is written with its role (statistics, a change, a signature and its example, a commit, a diff), so the
digest cites them without reading them back. Anything else is left alone (None). The Trace keeps the raw body:
this only shapes what the model is sent.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from bot.engine.history.digest import Cited, Reading, masked
from bot.engine.history.gittext import lines_from_git

_MAX_SERIES = 8
_SAMPLE_POINTS = 8  # the shape; the statistics and the change line carry the numbers a diagnosis cites
_MAX_FIELD_CHARS = 160
_MIN_REPEATED_CHARS = 20  # a field repeating the hit's message from this length on says `(message)` instead
_MIN_SHIFT_SIGMAS = 3.0  # a level shift is reported when it stands this far above the noise on either side
_MIN_SHIFT_RATIO = 0.2  # ... and moves the level by at least this share
_TIME_KEYS = ("@timestamp", "timestamp")
_MILLIS = re.compile(r"(?<=:\d\d)\.\d+(?=Z|[+-]\d\d:?\d\d$|$)")
_SIGNATURE_KEYS = ("level", "service", "message")


def text_from_payload(observation: str) -> str | None:
    """Compact lines for a raw Prometheus or Elasticsearch JSON body or git output (gittext.py); else None."""
    lines = _payload_lines(observation)
    return "\n".join(line.text for line in lines) if lines is not None else None


def payload_reading(observation: str) -> Reading | None:
    """A raw payload as the model reads it: its compact lines, marked; None when `observation` is not one."""
    lines = _payload_lines(observation)
    return Reading("\n".join(line.text for line in lines), tuple(enumerate(lines))) if lines is not None else None


@functools.lru_cache(maxsize=64)
def _payload_lines(observation: str) -> tuple[Cited, ...] | None:
    if not observation.lstrip().startswith("{"):
        lines = lines_from_git(observation) if observation.startswith(("commit ", "tag ")) else None
        return tuple(lines) if lines is not None else None
    try:
        body = json.loads(observation)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("hits"), dict) and isinstance(body["hits"].get("hits"), list):
        return tuple(_hits_lines(body))
    if body.get("status") in ("success", "error") and ("data" in body or "error" in body):
        found = _prometheus_lines(body)
        return tuple(found) if found is not None else None
    return None


def _prometheus_lines(body: Mapping[str, Any]) -> list[Cited] | None:
    if body.get("status") == "error":
        return [Cited(f"prometheus error ({body.get('errorType', '?')}): {body.get('error', '')}")]
    data = body.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        return None
    kind, result = data.get("resultType"), data["result"]
    if not result:
        return [Cited(f"prometheus {kind}: no series matched")]
    if kind == "vector":
        return [
            Cited(f"prometheus vector: {len(result)} series"),
            *(Cited(f"{_labels(s)} {_number(s.get('value', [0, 'NaN'])[1])}") for s in result),
        ]
    if kind != "matrix":
        return None
    lines = [Cited(f"prometheus matrix: {len(result)} series{_span(result)}")]
    for series in result[:_MAX_SERIES]:
        lines += _series_lines(series)
    if len(result) > _MAX_SERIES:
        lines.append(Cited(f"[{len(result) - _MAX_SERIES} more series not shown]"))
    return lines


def _span(result: Sequence[Mapping[str, Any]]) -> str:
    stamps = [float(p[0]) for s in result for p in s.get("values", ())[:1] + s.get("values", ())[-1:]]
    if not stamps:
        return ""
    first, last = _clock(min(stamps), date=True), _clock(max(stamps), date=True)
    same_day = first[:10] == last[:10]
    return f", {first} to {last[11:] if same_day else last} UTC"


def _series_lines(series: Mapping[str, Any]) -> list[Cited]:
    points = [(float(t), _float(v)) for t, v in series.get("values", ())]
    values = [v for _, v in points if not math.isnan(v)]
    head = f"series {_labels(series)}: {len(points)} points" if series.get("metric") else f"{len(points)} points"
    if not values:
        return [Cited(f"{head}, all NaN")]
    stats = (
        f"min {_number(min(values))} · median {_number(statistics.median(values))} · "
        f"max {_number(max(values))} · last {_number(values[-1])}"
    )
    shift = [Cited(line, "change") for line in _shift_line(points)]
    sample = _sample_line(points[:: max(1, len(points) // _SAMPLE_POINTS)])
    return [Cited(head), Cited(stats, "stats"), *shift, Cited(sample)]


def _sample_line(sample: Sequence[tuple[float, float]]) -> str:
    """`points every 15m from 14:05: 0.202 0.203 …` when evenly spaced (the times said once), else `points: HH:MM v,
    …` (a series with gaps)."""
    gaps = {round(later[0] - earlier[0]) for earlier, later in itertools.pairwise(sample)}
    if len(gaps) == 1 and (gap_s := gaps.pop()) > 0:
        values = " ".join(_number(v) for _, v in sample)
        return f"points every {_interval(gap_s)} from {_clock(sample[0][0])}: {values}"
    return "points: " + ", ".join(f"{_clock(t)} {_number(v)}" for t, v in sample)


def _interval(seconds: int) -> str:
    """900 -> `15m`, 3600 -> `1h`, 90 -> `90s`: the largest whole unit."""
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _shift_line(points: Sequence[tuple[float, float]]) -> list[str]:
    """`change: HH:MM a -> b (xR)` for the split of the series into two levels that explains it best."""
    kept = [(t, v) for t, v in points if not math.isnan(v)]
    if len(kept) < 6:
        return []
    values = [v for _, v in kept]
    total, squares, best, best_at = sum(values), sum(v * v for v in values), -1.0, 0
    left = 0.0
    for index in range(2, len(values) - 1):  # at least two points a side
        left = sum(values[:index]) if index == 2 else left + values[index - 1]
        gain = left * left / index + (total - left) ** 2 / (len(values) - index)
        if gain > best:
            best, best_at = gain, index
    before, after = values[:best_at], values[best_at:]
    noise = math.sqrt(max(squares - best, 0.0) / len(values))  # the spread left around the two levels
    low, high = statistics.fmean(before), statistics.fmean(after)
    shift = abs(high - low)
    if shift < _MIN_SHIFT_SIGMAS * noise or shift < _MIN_SHIFT_RATIO * max(abs(low), abs(high)):
        return []
    ratio = f" (x{high / low:.1f})" if low > 0 and high > 0 else ""
    return [f"change: {_clock(kept[best_at][0])} {_number(low)} -> {_number(high)}{ratio}"]


def _hits_lines(body: Mapping[str, Any]) -> list[Cited]:
    hits = body["hits"]
    total = hits.get("total")
    count = total.get("value") if isinstance(total, dict) else total
    sources = [hit.get("_source") or hit.get("fields") or {} for hit in hits["hits"] if isinstance(hit, dict)]
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for source in sources:
        groups.setdefault(masked(_signature(source)), []).append(source)
    lines = [
        Cited(
            f"elasticsearch: {count if count is not None else '?'} hits, {len(sources)} shown, "
            f"{len(groups)} kinds (alike but for numbers and ids):"
        )
    ]
    ranked = sorted(groups.values(), key=len, reverse=True)
    for number, members in enumerate(ranked, start=1):
        lines += _group_lines(number, members)
    if isinstance(body.get("aggregations"), dict):
        lines.append(Cited("aggregations: " + _short(json.dumps(body["aggregations"], separators=(",", ":")), 600)))
    return lines


def _signature(source: Mapping[str, Any]) -> str:
    return " ".join(_short(str(source[key]), _MAX_FIELD_CHARS * 2) for key in _SIGNATURE_KEYS if source.get(key))


def _group_lines(number: int, members: Sequence[Mapping[str, Any]]) -> list[Cited]:
    """`N. COUNTx signature (first … last)` and an `example:` line with the group's other fields."""
    times = sorted(str(m[key]) for m in members for key in _TIME_KEYS if m.get(key))
    group = f"{len(members)}x {_signature(members[0])}{_span_text(times)}"
    head = Cited(f"{number}. {group}", "signature", group)
    keys = dict.fromkeys(k for m in members for k in m if k not in _TIME_KEYS + _SIGNATURE_KEYS)
    message = str(members[0].get("message") or "").strip()
    fields = []
    for key in keys:
        values = {_field(m[key], message) for m in members if m.get(key) not in (None, "")}
        if len(values) == 1:
            fields.append(f"{key}={values.pop()}")
        elif 1 < len(values) < len(members):  # one value per hit is an id (trace, request): it says nothing here
            fields.append(f"{key}=({len(values)} values)")
    return [head, Cited(f"   example: {' '.join(fields)}", "example")] if fields else [head]


def _span_text(times: Sequence[str]) -> str:
    """` (2026-11-30T15:33:41Z … 15:34:56Z)`: whole seconds, the date once when both ends share it."""
    if not times:
        return ""
    first, last = (_MILLIS.sub("", t) for t in (times[0], times[-1]))
    if first == last:
        return f" ({first})"
    day = first.partition("T")[0]
    return f" ({first} … {last.removeprefix(day + 'T') if day and last.startswith(day + 'T') else last})"


def _field(value: Any, message: str = "") -> str:
    """A field's value on one line: a multi-line one (a stack trace) as its first line and its line count; the
    hit's message, which the signature already shows, as `(message)`."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
    lines = text.strip().splitlines() or [""]
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    first = lines[0].strip()
    for repeated in (message, message.split(" (")[0]):  # the message, or its text before its details
        if len(repeated) >= _MIN_REPEATED_CHARS and repeated in first:
            first = first.replace(repeated, "(message)")
            break
    return _short(first, _MAX_FIELD_CHARS) + more


def _labels(series: Mapping[str, Any]) -> str:
    metric = series.get("metric") or {}
    return "{" + ", ".join(f'{k}="{v}"' for k, v in metric.items()) + "}"


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _number(value: Any, digits: int = 3) -> str:
    number = _float(value)
    return "NaN" if math.isnan(number) else f"{number:.{digits}g}"


def _clock(stamp: float, *, date: bool = False) -> str:
    moment = datetime.fromtimestamp(stamp, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M" if date else "%H:%M")


def _short(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"
