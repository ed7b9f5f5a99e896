"""The model-free quick lookup: one value or the newest deploy of one named service, with exactly one query.

Used on the lookup route when no LLM is configured or it is down, so "what is the p99 of order now?" costs
one tool call rather than the playbook's full diagnosis. The question must name one known service (the
topology's, else what list_services reports) and one thing: a metric by its role (mapped to the catalogue's
name by `metric_roles`, as the playbook reads them) or deploys. Anything less certain returns None and says
why through `on_miss`, so the caller can run the full diagnosis instead of guessing. The answer reads the step's
data (tools/results.py) and quotes its facts with the tools' own renderers, exactly as the observation shows them.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.engine.context import result_gist
from bot.engine.types import Question, Step, StepObserver, StopReason, Totals, Trace
from bot.playbook.diagnosis import usable_roles
from bot.playbook.evidence import service_from_text
from bot.playbook.probes import ProbeRun, Window
from bot.routing.intent import cjk_spaced
from tools.base import Toolbox
from tools.deploys.records import DeployList, deploys_heading, record_line, release_at
from tools.metrics.series import (
    NO_SAMPLES,
    MetricSeries,
    count_note,
    finding_lines,
    heading,
    no_finding_line,
    stats_line,
    value_text,
)
from tools.results import deploys_of, series_of, services_of

log = logging.getLogger(__name__)

METRIC_RANGE = "1h"
DEPLOY_RANGE = "7d"
MAX_KNOWN_SHOWN = 12  # services named in the note when the question names none of them
DEPLOYS = "deploys"
_I = re.IGNORECASE
# What a question asks for: a metric role (the catalogue's `role`), or deploys. Word boundaries are ASCII-only
# (see intent.cjk_spaced), so "order的p99" reads like "order 的 p99".
ASKED_WORDS: dict[str, re.Pattern[str]] = {
    "latency": re.compile(r"\bp\d{2}\b|\blatency\b|response time|延迟|耗时|响应时间", _I),
    "errors": re.compile(r"\berror[ _-]?(rate|ratio)\b|\b5xx\b|错误率|报错率|失败率", _I),
    "traffic": re.compile(r"\b(qps|rps|traffic|throughput)\b|流量|请求量|吞吐", _I),
    "cpu": re.compile(r"\bcpu\b", _I),
    "memory": re.compile(r"\b(mem|memory|rss)\b|内存", _I),
    "restarts": re.compile(r"\brestart(s|ed)?\b|重启", _I),
    DEPLOYS: re.compile(r"\b(deploy(s|ed|ment|ments)?|releases?|released|versions?|rollouts?)\b|发布|版本|上线", _I),
}
# "requests" alone means traffic, but "5xx requests" asks for errors: a weak word counts only when alone.
_WEAK_TRAFFIC = re.compile(r"\brequests?\b|请求", _I)
_NO_MODEL_LINE = '_Answered from this one query, without a model. Ask "why …" for a full diagnosis._'
_REASON_CHARS = 2_000  # a failed query's reason: its error's first line, whole

Miss = Callable[[str], None]


@dataclass(frozen=True)
class _Ask:
    """One resolved lookup: the tool, its arguments, and how to name the thing read."""

    service: str
    tool: str
    args: dict[str, str]
    what: str


def answer_lookup(
    question: Question,
    tools: Toolbox,
    *,
    metric_roles: Mapping[str, str],
    services: Iterable[str] = (),
    on_step: StepObserver | None = None,
    on_miss: Miss | None = None,
) -> Trace | None:
    """One query reads one value (or the newest deploy) of one named service; None when unsure, `on_miss` says why."""
    started_at, started = datetime.now(UTC), time.monotonic()
    miss = on_miss or (lambda why: None)
    text = cjk_spaced(question.text)
    asked = _asked(text, miss)
    if asked is None:
        return None
    run = ProbeRun(tools, on_step, Window(METRIC_RANGE, "the last hour", started_at))
    ask = _resolve(run, text, asked, list(services), usable_roles(tools, metric_roles), miss)
    if ask is None:
        return None
    thought = f"A quick lookup needs one query: reading {ask.what} (no model involved)."
    run.call(thought, ask.tool, ask.args)
    answer, complete = _answer(ask, run.steps[-1])
    totals = Totals(
        steps=len(run.steps),
        elapsed_ms=int((time.monotonic() - started) * 1000),
        tool_calls=len(run.steps),
        tool_errors=sum(s.status in ("error", "refused") for s in run.steps),
    )
    return Trace(
        trace_id=run.trace_id,
        question=question.text,
        protocol="single",
        steps=tuple(run.steps),
        answer=f"{answer}\n{_NO_MODEL_LINE}",
        complete=complete,
        stop_reason=StopReason.FINISH,
        totals=totals,
        started_at=started_at.isoformat(timespec="seconds"),
    )


def asked_from_text(text: str) -> list[str]:
    """The roles (and/or "deploys") a question asks about, in ASKED_WORDS order."""
    spaced = cjk_spaced(text)
    asked = [name for name, pattern in ASKED_WORDS.items() if pattern.search(spaced)]
    return asked or (["traffic"] if _WEAK_TRAFFIC.search(spaced) else [])


def _asked(text: str, miss: Miss) -> str | None:
    asked = asked_from_text(text)
    if len(asked) == 1:
        return asked[0]
    miss("it names no metric or deploys" if not asked else f"it asks about more than one thing ({', '.join(asked)})")
    return None


def _resolve(
    run: ProbeRun, text: str, asked: str, services: list[str], roles: Mapping[str, str], miss: Miss
) -> _Ask | None:
    tool = "query_deploy_records" if asked == DEPLOYS else "query_metrics"
    if tool not in run.tools:
        miss(f"no {tool} tool is configured")
        return None
    if asked != DEPLOYS and asked not in roles:
        miss(f"no catalogue metric has the role {asked!r}")
        return None
    named, known = _named_services(run, text, services)
    if len(named) != 1:
        shown = ", ".join(known[:MAX_KNOWN_SHOWN]) + (", …" if len(known) > MAX_KNOWN_SHOWN else "")
        miss(
            f"it names more than one service ({', '.join(named)})"
            if named
            else f"it names no known service; known: {shown or 'none'}"
        )
        return None
    service = named[0]
    if asked == DEPLOYS:
        return _Ask(
            service, tool, {"service": service, "range": DEPLOY_RANGE}, f"{service}'s deploys of the last 7 days"
        )
    metric = roles[asked]
    return _Ask(
        service,
        tool,
        {"service": service, "metric": metric, "range": METRIC_RANGE},
        f"{service}'s {metric} over the last hour",
    )


def _named_services(run: ProbeRun, text: str, services: list[str]) -> tuple[list[str], list[str]]:
    """The known services the text names, and the known ones; list_services is asked only when needed."""
    named = _names_in(text, services)
    if named or "list_services" not in run.tools:
        return named, services
    thought = "The question names no service from the topology; listing the services Prometheus knows."
    run.call(thought, "list_services", {})
    known = list(dict.fromkeys([*services, *services_of(run.steps[-1])]))
    return _names_in(text, known), known


def _names_in(text: str, services: Iterable[str]) -> list[str]:
    found = [s for s in dict.fromkeys(services) if service_from_text(text, [s])]
    # "orders-db" also contains "orders": keep only names no longer found name contains
    return [s for s in found if not any(s != other and s in other for other in found)]


def _answer(ask: _Ask, step: Step) -> tuple[str, bool]:
    """The answer's lead sentence and the facts it rests on, quoted as the observation shows them; complete unless
    the query failed."""
    if step.status in ("error", "refused"):
        return f"I could not read {ask.what}: {result_gist(step, _REASON_CHARS)}", False
    if (found := deploys_of(step)) is not None:
        return _deploy_answer(ask, found), True
    if (series := series_of(step)) is not None:
        return _metric_answer(ask, series), True
    return "\n".join([f"{ask.what}, as the tool returned it (not read further):", *_quoted([result_gist(step)])]), True


def _metric_answer(ask: _Ask, series: MetricSeries) -> str:
    stats, unit = series.stats, series.unit
    if stats is None:
        return "\n".join([f"No samples of {ask.what}.", *_quoted([heading(series), NO_SAMPLES])])
    lead = (
        f"{ask.service}'s {ask.args['metric']} is {value_text(stats.last, unit)} (the last sample; median "
        f"{value_text(stats.median, unit)}, max {value_text(stats.max, unit)} over the last hour)."
    )
    note = [line] if (line := count_note(series)) else []
    found = finding_lines(series) or [no_finding_line(series)]
    return "\n".join([lead, *_quoted([heading(series), stats_line(stats, unit), *note, *found])])


def _deploy_answer(ask: _Ask, found: DeployList) -> str:
    if not found.records:
        return "\n".join([f"No deploys of {ask.service} in the last 7 days.", *_quoted([deploys_heading(found)])])
    newest = found.records[0]
    lead = f"The newest deploy of {ask.service}: {release_at(newest)}."
    return "\n".join([lead, *_quoted([deploys_heading(found), record_line(newest)])])


def _quoted(lines: list[str]) -> list[str]:
    return [f"> {line}" for line in lines]
