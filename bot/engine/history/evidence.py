"""A result as the model reads it (a `Reading`): its text, and which of its lines a diagnosis cites, from its data.

A built-in tool's text is rendered from its data (tools/results.py), so the lines worth citing are rendered here
with the same functions and found in the text by equality, never recognised by their wording: the statistics and
findings of a metric series, the counts, signatures and examples of a log search, one line per deploy, a diff,
ranked suspects, Kubernetes warnings and troubled pods. A text-only result (an MCP tool's, or a step stored before
results carried data) has no data: a raw backend payload in it is rewritten with its lines marked (payloads.py);
any other text is cited nowhere, so the digest folds or cuts it rather than guess at it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.engine.history.digest import Cited, Reading, Role
from bot.engine.history.payloads import payload_reading
from tools.analysis.ranking import ChangeRanking, Suspect, new_signature_line, suspect_line, suspect_text
from tools.base import ToolData
from tools.deploys.records import DeployList, DiffReport, record_head, record_line
from tools.kubernetes.objects import EventList, KubeEvent, Pod, PodList, event_line, pod_line
from tools.logs.render import counts_line, example_line, no_lines_line, seconds_clock, signature_line, signature_text
from tools.logs.summary import LogSummary, SignatureBlock
from tools.metrics.series import (
    NO_SAMPLES,
    MetricSeries,
    change_line,
    no_finding_line,
    sawtooth_line,
    spike_line,
    stats_line,
    stop_line,
    trend_line,
)


def reading_of(text: str, data: ToolData | None) -> Reading:
    """The result of a step as the model reads it: a tool's text with the lines its data cites; a text-only one's
    raw payload rewritten (payloads.py), or else its text as it is."""
    if data is None:
        return payload_reading(text) or Reading(text)
    return Reading(text, located(text, cited_lines(data)))


def cited_lines(data: ToolData) -> list[Cited]:
    """The lines of a tool's text that a diagnosis cites, in the text's order, rendered from its data."""
    if isinstance(data, MetricSeries):
        return _series_lines(data)
    if isinstance(data, LogSummary):
        return _log_lines(data)
    if isinstance(data, DeployList):
        return [Cited(record_line(r), "deploy", record_head(r)) for r in data.records]
    if isinstance(data, DiffReport):
        return [Cited(line, "diff") for line in data.diff.splitlines()]
    if isinstance(data, ChangeRanking):
        suspects = [Cited(suspect_line(n, s), "suspect", _suspect_gist(n, s)) for n, s in enumerate(data.suspects, 1)]
        return suspects + [Cited(new_signature_line(n), "new") for n in data.new_signatures]
    if isinstance(data, EventList):  # a Warning or a Node's event (NotReady, a drain) is a finding
        return [Cited(event_line(e), "event", event_line(e).strip()) for e in data.events if _finding(e)]
    if isinstance(data, PodList):  # a pod not ready, restarting or waiting is a finding
        return [Cited(pod_line(p), "status", pod_line(p).strip()) for p in data.pods if _troubled(p)]
    return []  # rollouts, runbooks, services, a calculation: no line of them is a finding


def _suspect_gist(rank: int, suspect: Suspect) -> str:
    """The leader with its reasons; a runner-up by what it is and its score (what the answer must weigh it by)."""
    return suspect_text(suspect) if rank == 1 else f"{rank}. {suspect.what} (score {suspect.score})"


def _finding(event: KubeEvent) -> bool:
    """A Warning, or anything that happened to a Node (NodeNotReady is a Normal event): the infrastructure moved."""
    return event.type != "Normal" or event.object_kind == "Node"


def _troubled(pod: Pod) -> bool:
    return pod.restarts > 0 or not pod.ready or any(c.waiting is not None for c in pod.containers)


def located(text: str, cited: Iterable[Cited]) -> tuple[tuple[int, Cited], ...]:
    """Each cited line with the index of the line of `text` that shows it (searched in order; -1 when none does)."""
    lines = text.splitlines()
    found: list[tuple[int, Cited]] = []
    cursor = 0
    for line in cited:
        index = _index(lines, line.text, cursor)
        found.append((index, line))
        cursor = index + 1 if index >= 0 else cursor
    return tuple(found)


def _index(lines: Sequence[str], text: str, start: int) -> int:
    try:
        return lines.index(text, start)
    except ValueError:
        return -1


def _series_lines(series: MetricSeries) -> list[Cited]:
    """The statistics, then the change, spike, trend, sawtooth and stopped lines (or the line saying there was
    none), as render_series prints them."""
    if series.stats is None:
        return [Cited(NO_SAMPLES, "status")]
    unit, clock = series.unit, series.window.clock_format
    cited = [Cited(stats_line(series.stats, unit), "stats")]
    cited += [Cited(change_line(c, unit, clock), "change") for c in series.changes]
    cited += [Cited(spike_line(s, unit, clock), "spike") for s in series.spikes]
    cited += [Cited(trend_line(t, unit, clock), "trend") for t in series.trends]
    cited += [Cited(sawtooth_line(series.sawtooth, unit, clock), "trend")] if series.sawtooth else []
    cited += [Cited(stop_line(series.stop, series.collection, unit, clock), "stop")] if series.stop else []
    return cited if len(cited) > 1 else [*cited, Cited(no_finding_line(series), "change")]


def _log_lines(summary: LogSummary) -> list[Cited]:
    """The counts, then each signature block's signatures with their examples (new since an onset, errors,
    warnings), as render_logs prints them; or the line saying there was no line at the clustered levels."""
    clock = seconds_clock(summary.window)
    cited = [Cited(counts_line(summary), "counts")]
    if summary.signatures is None:
        cited.append(Cited(no_lines_line(summary), "status"))
    new = summary.onset.new if summary.onset is not None else None
    blocks: tuple[tuple[SignatureBlock | None, Role], ...] = (  # render_logs' order: located() searches forward
        (new, "new"),
        (summary.signatures, "signature"),
        (summary.warnings, "signature"),
    )
    for block, role in blocks:
        cited += _signature_lines(block, clock, role) if block is not None else []
    return cited


def _signature_lines(block: SignatureBlock, clock: str, role: Role) -> list[Cited]:
    """A block's signatures with their examples; what began after the onset ("new") leads a one-line gist."""
    return [
        line
        for rank, sig in enumerate(block.top, 1)
        for line in (
            Cited(signature_line(rank, sig, clock), role, signature_text(sig, clock)),
            Cited(example_line(sig, clock), "example"),
        )
    ]
