"""The model-free quick lookup: one value or the newest deploy of one named service, with exactly one query.

Used on the lookup route when no LLM is configured or it is down, so "what is the p99 of order now?" costs
one tool call rather than the playbook's full diagnosis. The question must name one known service (the
topology's, else what list_services reports) and one thing: a metric by its role (mapped to the catalogue's
name by `metric_roles`, as the playbook reads them) or deploys. Anything less certain returns None and says
why through `on_miss`, so the caller can run the full diagnosis instead of guessing.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.engine.types import Question, StepObserver, StopReason, Totals, Trace
from bot.playbook.diagnosis import usable_roles
from bot.playbook.evidence import listed_services_from_text, service_from_text
from bot.playbook.probes import ProbeRun, Window
from bot.routing.intent import cjk_spaced
from tools.base import Toolbox

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
_STATS = re.compile(r"^min (?P<min>.+?) · median (?P<median>.+?) · max (?P<max>.+?) · last (?P<last>.+)$")
_DEPLOY_LINE = re.compile(r"^(?P<at>\d{4}-\d{2}-\d{2}T\S+) (?P<release>\S+/\S+)")
_NO_MODEL_LINE = '_Answered from this one query, without a model. Ask "why …" for a full diagnosis._'

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
    observation = run.call(thought, ask.tool, ask.args)
    step = run.steps[-1]
    answer, complete = _answer(ask, step.status, observation or step.observation)
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
    listed = listed_services_from_text(run.call(thought, "list_services", {}))
    known = list(dict.fromkeys([*services, *listed]))
    return _names_in(text, known), known


def _names_in(text: str, services: Iterable[str]) -> list[str]:
    found = [s for s in dict.fromkeys(services) if service_from_text(text, [s])]
    # "orders-db" also contains "orders": keep only names no longer found name contains
    return [s for s in found if not any(s != other and s in other for other in found)]


def _answer(ask: _Ask, status: str, observation: str) -> tuple[str, bool]:
    """The answer's lead sentence and the observation's key lines, quoted; complete unless the query failed."""
    lines = [line for line in observation.splitlines() if line.strip()]
    if status in ("error", "refused"):
        return f"I could not read {ask.what}: {lines[0] if lines else 'the tool gave no reason'}", False
    if ask.tool == "query_deploy_records":
        return _deploy_answer(ask, lines), True
    return _metric_answer(ask, lines), True


def _metric_answer(ask: _Ask, lines: list[str]) -> str:
    stats = next((m for line in lines if (m := _STATS.match(line))), None)
    if stats is None:
        return "\n".join([f"No samples of {ask.what}.", *_quoted(lines[:1] + lines[2:])])
    key = [line for line in lines if line.startswith(("min ", "change:", "spike:", "note:"))]
    lead = (
        f"{ask.service}'s {ask.args['metric']} is {stats['last']} (the last sample; median {stats['median']}, "
        f"max {stats['max']} over the last hour)."
    )
    return "\n".join([lead, *_quoted(lines[:1] + key)])


def _deploy_answer(ask: _Ask, lines: list[str]) -> str:
    newest = next((m for line in lines if (m := _DEPLOY_LINE.match(line))), None)
    if newest is None:
        return "\n".join([f"No deploys of {ask.service} in the last 7 days.", *_quoted(lines)])
    lead = f"The newest deploy of {ask.service}: {newest['release']} at {newest['at']}."
    return "\n".join([lead, *_quoted([lines[0], newest.string])])


def _quoted(lines: list[str]) -> list[str]:
    return [f"> {line}" for line in lines]
