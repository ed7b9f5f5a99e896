"""Ranking the suspects of a symptom: pure functions over plain data, one set of rules for every caller.

find_changes (tools/changes.py, the model's tool) and the playbook's "what changed" step
(bot/playbook/suspects.py) both gather changes around an onset and score them here, so the model and the
model-free path rank the same evidence the same way.
Where to look: the asked service and every service within two hops of it, both directions (`neighbourhood`).
How far back: minutes for a step, hours when memory or restarts changed (`lookback_for`).
How to score: the timing, the path through the topology, what the diff changed, judged by what each setting touches
(tools/analysis/changeclass.py: a cap explains saturation at peak, a log volume a full disk, wording nothing; an image
bump is code of unknown content) and a log signature naming the changed key or its new value;
a traffic surge in another caller of a dependency that degraded, just before the onset, is a suspect too.
What find_changes found is a ChangeRanking: the onset, the suspects best first with their reasons, the log
signatures new after the onset, and the checks that could not run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ClassVar, Literal, Protocol, TypeVar

import tools.analysis.changeclass as changeclass
from tools.analysis.configdiff import KeyChange
from tools.analysis.placement import SURGE_RATIO as SURGE_RATIO
from tools.analysis.placement import is_surge as is_surge
from tools.analysis.placement import surge_reasons as surge_reasons
from tools.analysis.reasons import CLOSE, Reason, place_reason, score_of
from tools.base import ToolData
from tools.timerange import TimeWindow, iso_z

STEP_LOOKBACK = timedelta(minutes=45)  # a step: the change that caused it landed minutes before
TREND_LOOKBACK = timedelta(hours=6)  # a leak or a creeping trend: hours before the first symptom
# A cap met by the daily load, a log volume filling a disk, a retry setting waiting for a blip: up to a day and more
# before the onset (only changes whose class can wait that long count from there; changeclass.DELAYED).
DELAYED_LOOKBACK = timedelta(hours=30)
MAX_DIFFS = 4  # the diffs read per ranking (each is one tool call)
# The symptoms assumed when the caller names none: what the golden signals show.
GOLDEN_SYMPTOMS = frozenset({changeclass.LATENCY, changeclass.ERRORS})


@dataclass(frozen=True)
class Suspect:
    """One change that may explain the symptom: a deploy, a traffic surge in another caller of a dependency, or an
    operational event (a DDL statement, a failover, a drain, a rollback: tools/analysis/events.py)."""

    cause: Literal["deploy", "surge", "event"]
    what: str  # as the ranking names it: "deploy order/v2.8.1 at 15:02", "traffic surge in web (x2.0 at 15:00)"
    reasons: tuple[Reason, ...]
    service: str  # the deployed service, or the caller whose traffic surged
    at: datetime | None
    version: str = ""  # a deploy's
    ratio: float | None = None  # a surge's traffic, after / before
    actor: str = ""  # who ran an event, where the data names one

    @property
    def score(self) -> int:
        return score_of(self.reasons)


@dataclass(frozen=True)
class Onset:
    """The earliest change point in the asked service's golden signals, else in its other symptoms."""

    metric: str
    at: datetime
    ratio: float  # after / before; 0.0 when the series stopped, inf when it rose from zero
    signal: str = ""  # the metric's role: latency, errors, traffic, memory, restarts, cpu, saturation


@dataclass(frozen=True)
class NewSignature:
    """A log signature (any level) seen after the onset and not in the hour before it."""

    service: str
    count: int
    template: str  # at most 140 characters


@dataclass(frozen=True)
class ChangeRanking(ToolData):
    """What find_changes found around a symptom's onset; `onset` None when the golden signals show no change."""

    kind: ClassVar[str] = "change_ranking"
    service: str
    window: TimeWindow  # where the onset was looked for
    onset: Onset | None
    said: datetime | None = None  # the time the user named, if any
    lookback: timedelta = STEP_LOOKBACK
    suspects: tuple[Suspect, ...] = ()  # best first
    new_signatures: tuple[NewSignature, ...] = ()
    not_run: tuple[str, ...] = ()  # checks that could not run, in words ("not run: deploys (...)")


class Dated(Protocol):
    """A deploy as either caller holds it: the service it changed and when (None when no time was read)."""

    @property
    def service(self) -> str: ...

    @property
    def at(self) -> datetime | None: ...


D = TypeVar("D", bound=Dated)


def neighbourhood(topology: Mapping[str, Sequence[str]], service: str, hops: int = 2) -> list[str]:
    """Services within `hops` of `service`, both directions (callees and callers), nearest first."""
    edges: dict[str, set[str]] = {}
    for caller, callees in topology.items():
        for callee in callees:
            edges.setdefault(caller, set()).add(callee)
            edges.setdefault(callee, set()).add(caller)
    found, frontier = [service], [service]
    for _ in range(hops):
        frontier = sorted({n for s in frontier for n in edges.get(s, ())} - set(found))
        found += frontier
    return found


def other_callers(topology: Mapping[str, Sequence[str]], dependency: str, target: str) -> list[str]:
    """The services that call `dependency`, other than `target`."""
    return [c for c, callees in topology.items() if dependency in callees and c != target]


def lookback_for(slow_changed: bool) -> timedelta:
    """Hours when memory or restarts changed (a leak, a sawtooth of OOM kills), else minutes."""
    return TREND_LOOKBACK if slow_changed else STEP_LOOKBACK


def lookback_words(lookback: timedelta) -> str:
    minutes = int(lookback.total_seconds() // 60)
    return f"{minutes // 60} h" if minutes >= 60 else f"{minutes} min"


def deploys_to_read(
    deploys: Iterable[D],
    near: Sequence[str],
    target: str,
    onset: datetime,
    lookback: timedelta,
    degraded: Sequence[str] = (),
) -> list[D]:
    """The deploys worth a diff: in the neighbourhood and the lookback, the asked service's first, then those of the
    services that degraded (a leak hours old in the service that degraded outranks a fresh deploy of a steady one),
    nearest first."""
    start = onset - lookback
    found = [d for d in deploys if d.service in near and d.at is not None and start <= d.at <= onset]
    found.sort(key=lambda d: (d.service != target, d.service not in degraded, onset - d.at if d.at else lookback))
    return found[:MAX_DIFFS]


def deploy_reasons(deploy: Dated, target: str, onset: datetime, changed_too: bool | None) -> list[Reason]:
    """Timing and topology: `changed_too` is whether the deployed service changed as well (None: not looked at)."""
    close = deploy.at is None or onset - deploy.at <= CLOSE
    # times, not a computed gap: every number in an answer must be one an observation shows
    when = f"at {deploy.at:%H:%M} UTC, " if deploy.at else ""
    timing = f"deployed {when}{'just' if close else 'well'} before the onset at {onset:%H:%M} UTC"
    within = f"{deploy.service} is within two hops of {target}"
    return [Reason(2 if close else 1, timing), place_reason(deploy.service, target, changed_too, within)]


def meaningful_changes(
    changes: Sequence[KeyChange], symptoms: Iterable[str] = GOLDEN_SYMPTOMS, *, delayed: bool = False
) -> list[KeyChange]:
    """The changed settings (runtime flags split out of their option strings) whose class can explain the symptoms,
    the image version last: it is code of unknown content, weaker than a setting that names the mechanism. With
    `delayed`, only the classes whose effect can wait hours (a cap, a pool, a rate limit, a log volume, retries)."""
    wanted = frozenset(symptoms)
    classed = [(c, changeclass.class_of(c)) for c in changeclass.expanded(changes)]
    waits = changeclass.DELAYED
    found = [c for c, cls in classed if changeclass.can_explain(cls, wanted) and (cls in waits or not delayed)]
    return sorted(found, key=lambda c: changeclass.class_of(c) == changeclass.IMAGE)


def diff_reasons(
    changes: Sequence[KeyChange],
    risky_lines: Sequence[str],
    signatures: Sequence[tuple[str, str]],
    symptoms: Iterable[str] = GOLDEN_SYMPTOMS,
) -> list[Reason]:
    """A changed setting whose class can explain the symptoms counts, an image bump alone a little (code of unknown
    content), a risky statement counts; wording, or logging for a symptom logging cannot cause, counts against; a log
    signature that names a changed key or its new value counts too. `signatures` are (template, as cited)."""
    meaningful = meaningful_changes(changes, symptoms)
    settings = [c for c in meaningful if changeclass.class_of(c) != changeclass.IMAGE]
    reasons = [Reason(2, f"its diff runs {risky_lines[0]}")] if risky_lines else []
    if settings:
        what = "; ".join(f"{c.key} {c.old} → {c.new} ({changeclass.class_of(c)})" for c in settings[:2])
        reasons.append(Reason(2, f"its diff changed {what}"))
    elif meaningful:
        image = meaningful[0]
        reasons.append(Reason(1, f"its image changed {image.old} → {image.new}: code of unknown content"))
    elif not risky_lines:
        touched = _touched(changes)
        reasons.append(Reason(-2, f"its diff changes no setting that could explain the symptom ({touched})"))
    named = naming_signature([template for template, _ in signatures], settings)
    if named is not None:
        reasons.append(Reason(2, f"a log signature names what it changed: {signatures[named][1]}"))
    elif (shown := showing_signature(signatures, settings)) is not None:
        reasons.append(shown)
    return reasons


def showing_signature(signatures: Sequence[tuple[str, str]], settings: Sequence[KeyChange]) -> Reason | None:
    """A log line reporting what a changed setting limits (a GC pause for a GC flag, connection slots for a
    connection cap, a 429 for a rate limit): the mechanism, seen. Image bumps are left out: code explains anything."""
    for template, quoted in signatures:
        shown = changeclass.symptoms_in_text(template) & changeclass.SPECIFIC
        for change in settings:
            if shown & changeclass.EXPLAINS[changeclass.class_of(change)]:
                return Reason(2, f"a log signature shows what {change.key} limits: {quoted}")
    return None


def _touched(changes: Sequence[KeyChange]) -> str:
    classes = list(dict.fromkeys(changeclass.class_of(c) for c in changeclass.expanded(changes)))
    return ", ".join(classes) if classes else "code only"


def delayed_reason(
    changes: Sequence[KeyChange], at: datetime, onset: datetime, symptoms: Iterable[str] = GOLDEN_SYMPTOMS
) -> Reason | None:
    """A change that landed hours before the onset counts when what it touches can wait that long and explain the
    symptoms (a log volume explains a full disk, not failing requests), else not."""
    waiting = meaningful_changes(changes, symptoms, delayed=True)
    if not waiting:
        return None
    why = changeclass.delay_words(changeclass.class_of(waiting[0]))
    return Reason(1, f"landed at {at:%Y-%m-%d %H:%M} UTC, hours before the onset at {onset:%H:%M} UTC: {why}")


def naming_signature(signatures: Sequence[str], changes: Sequence[KeyChange]) -> int | None:
    """The index of the first signature that names a changed key's last part or its new value (3+ characters)."""
    words = {w.casefold() for c in changes for w in (changeclass.last_part(c.key), c.new.strip("\"'")) if len(w) >= 3}
    for index, text in enumerate(signatures):
        folded = text.casefold()
        if any(re.search(rf"(?<![\w]){re.escape(w)}(?![\w])", folded) for w in words):
            return index
    return None


def saturation_reasons(saturated: Sequence[tuple[str, str]], changes: Sequence[KeyChange]) -> list[Reason]:
    """A saturation signal that rose at the onset weighs for a deploy; more when its diff changed what saturated
    (a pool's size and that pool's pending connections share a word). `saturated` is (metric, its change in the
    words the metric tool printed)."""
    for metric, described in saturated:
        key = next((c for c in meaningful_changes(changes) if changeclass.shares_a_word(metric, c.key)), None)
        if key is not None:
            return [Reason(3, f"{described}, and its diff changed {key.key} {key.old} → {key.new}, which sizes it")]
    return [Reason(1, f"at the onset {saturated[0][1]}")] if saturated else []


def render_ranking(found: ChangeRanking) -> str:
    """The onset, the lookback, the suspects best first with their reasons, new log signatures, checks not run."""
    span = f"{iso_z(found.window.start)}/{iso_z(found.window.end)}"
    onset = found.onset
    if onset is None:
        return (
            f"no change point in {found.service}'s golden signals, memory, restarts or saturation over {span}; "
            "nothing to rank (is the incident over, or elsewhere?)"
        )
    size = "from 0" if math.isinf(onset.ratio) else f"x{onset.ratio:.1f}"
    head = [f"onset: {found.service} {onset.metric} changed at {onset.at:%Y-%m-%d %H:%M} UTC ({size})"]
    if onset.signal and onset.signal not in ("latency", "errors", "traffic"):
        head[0] += f", in its {onset.signal}: the golden signals show no change"
    if found.said is not None and abs(onset.at - found.said) >= timedelta(minutes=15):
        head.append(f"you said {found.said:%H:%M}; the {onset.metric} change starts at {onset.at:%H:%M} UTC")
    shape = "a trend or sawtooth" if found.lookback > STEP_LOOKBACK else "a step"
    head.append(f"lookback: {lookback_words(found.lookback)} ({shape})")
    lines = [suspect_line(rank, suspect) for rank, suspect in enumerate(found.suspects, 1)]
    return "\n".join(
        [
            *head,
            "suspects, best first:",
            *(lines or ["(none found in the lookback)"]),
            *(new_signature_line(n) for n in found.new_signatures),
            *found.not_run,
        ]
    )


def new_signature_line(new: NewSignature) -> str:
    """`new log signature in order after the onset: 40x <template>`."""
    return f"new log signature in {new.service} after the onset: {new.count}x {new.template}"


def suspect_line(rank: int, suspect: Suspect) -> str:
    """`1. deploy order/v2.8.1 at 15:02 (score 7): <reason>; <reason>`."""
    return f"{rank}. {suspect_text(suspect)}"


def suspect_text(suspect: Suspect) -> str:
    """A suspect as its line shows it, without its rank: `deploy order/v2.8.1 at 15:02 (score 7): <reasons>`."""
    return f"{suspect.what} (score {suspect.score}): {'; '.join(r.text for r in suspect.reasons)}"
