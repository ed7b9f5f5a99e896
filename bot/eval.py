"""Diagnosis quality over the incident suite: score each run, report per scenario and in total.

One small module on purpose (DESIGN: no eval harness bigger than the product). The caller supplies
`diagnose(case) -> Trace`, which runs the full path (intent gate -> loop or playbook -> tools -> the
scenario's local backends); this module times it, scores the trace against the scenario's must-name facts,
and renders the report as a table and as JSON for the trace store's eval history.
"""

from __future__ import annotations

import itertools
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from bot.engine.types import Trace
from bot.safety.grounding import unverified_claims
from bot.sandbox.scenario import Scenario

log = logging.getLogger(__name__)

# How an answer says there is nothing to fix; used for the "nothing is wrong" scenario.
_NO_INCIDENT_RX = re.compile(
    r"\bno (?:incident|anomal\w*|outage|significant (?:change|anomal\w*)|(?:real )?problem|issue)s?\b"
    r"|nothing (?:is )?(?:wrong|abnormal|unusual)|(?:all|everything) (?:looks |is )?(?:healthy|normal)"
    r"|within (?:the )?normal|no action (?:is )?needed",
    re.IGNORECASE,
)
# Blaming something; "Root cause: none / no incident" (the answer format's label) is not blame.
_CLAIMS_CAUSE_RX = re.compile(
    r"\blikely cause\b|\bcaused by\b|\broot cause\b(?!:?\s*(?:none|no|nothing|there is no|n/a)\b)",
    re.IGNORECASE,
)
_TOOL_ERROR_STATUSES = ("error", "refused")


@dataclass(frozen=True)
class EvalCase:
    """One scenario as the eval sees it: the user's question and what a correct answer must say."""

    name: str
    question: str
    must_name: tuple[str, ...]
    no_incident: bool = False  # the right answer is that there is no incident


@dataclass(frozen=True)
class CaseResult:
    scenario: str
    hit: bool
    missing: tuple[str, ...]
    route: str
    protocol: str
    steps: int
    stop_reason: str
    complete: bool
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    format_errors: int
    tool_calls: int
    tool_errors: int
    tool_errors_corrected: int
    unverified: tuple[str, ...]
    trace_id: str = ""
    error: str = ""  # set when the run itself failed; the case then counts as a miss

    @property
    def format_error_rate(self) -> float:
        return self.format_errors / self.steps if self.steps else 0.0

    @property
    def tool_error_rate(self) -> float:
        return self.tool_errors / self.tool_calls if self.tool_calls else 0.0


@dataclass(frozen=True)
class EvalReport:
    run_id: str
    started_at: str
    mode: str  # "playbook" | "model"
    model: str
    results: tuple[CaseResult, ...]

    @property
    def hits(self) -> int:
        return sum(r.hit for r in self.results)


def case_from_scenario(scenario: Scenario) -> EvalCase:
    """The scenario's own `expect_incident = false` marks the "nothing is wrong" case (a log-only incident is one)."""
    return EvalCase(scenario.name, scenario.question, scenario.must_name, no_incident=not scenario.expect_incident)


def normalised(text: str) -> str:
    """Case, markup, separators and thousands commas removed: `maximum_pool_size` ~ `maximumPoolSize`."""
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text.casefold())
    return re.sub(r"[\s`*_\-'\"]+", "", text)


def fact_named(fact: str, answer: str) -> bool:
    """Whether the answer names the fact; a version matches with or without its leading "v"."""
    if re.fullmatch(r"v?\d+(?:\.\d+)+[\w.+-]*", fact.strip(), re.IGNORECASE):
        core = re.escape(fact.strip().casefold().removeprefix("v"))
        return re.search(rf"(?<![\w.])v?{core}(?!\w|\.\d)", answer.casefold()) is not None
    return normalised(fact) in normalised(answer)


def says_no_incident(answer: str) -> bool:
    """The answer states there is no incident and does not also blame a cause."""
    return bool(_NO_INCIDENT_RX.search(answer)) and not _CLAIMS_CAUSE_RX.search(answer)


def corrected_tool_errors(trace: Trace) -> int:
    """Tool errors whose very next step called the same tool again and got an answer."""
    steps = trace.steps
    return sum(
        1
        for step, following in itertools.pairwise(steps)
        if step.status in _TOOL_ERROR_STATUSES and following.action == step.action
        and following.status in ("ok", "no_data")
    )


def score_trace(case: EvalCase, trace: Trace, wall_s: float) -> CaseResult:
    """Score one finished run against its case."""
    missing = tuple(f for f in case.must_name if not fact_named(f, trace.answer))
    hit = not missing and (not case.no_incident or says_no_incident(trace.answer))
    evidence = [trace.question, *(s.observation for s in trace.steps)]
    totals = trace.totals
    tool_steps = [s for s in trace.steps if s.action not in ("", "finish")]
    return CaseResult(
        scenario=case.name,
        hit=hit,
        missing=missing,
        route=trace.intent.route if trace.intent else "",
        protocol=trace.protocol,
        steps=totals.steps or len(trace.steps),
        stop_reason=trace.stop_reason.value,
        complete=trace.complete,
        prompt_tokens=totals.prompt_tokens,
        completion_tokens=totals.completion_tokens,
        wall_s=round(wall_s, 2),
        format_errors=totals.format_errors,
        tool_calls=totals.tool_calls or len(tool_steps),
        tool_errors=totals.tool_errors or sum(s.status in _TOOL_ERROR_STATUSES for s in tool_steps),
        tool_errors_corrected=corrected_tool_errors(trace),
        unverified=tuple(unverified_claims(trace.answer, evidence)),
        trace_id=trace.trace_id,
    )


def run_eval(
    cases: Iterable[EvalCase],
    diagnose: Callable[[EvalCase], Trace],
    *,
    mode: str,
    model: str = "",
    on_result: Callable[[CaseResult], None] | None = None,
) -> EvalReport:
    """Diagnose every case in turn; one failing scenario is recorded as a miss, never ends the run."""
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    results = []
    for case in cases:
        started = time.monotonic()
        try:
            trace = diagnose(case)
            # the diagnosis' own clock when it has one: sandbox set-up is not the model's time
            wall_s = trace.totals.elapsed_ms / 1000 if trace.totals.elapsed_ms else time.monotonic() - started
            result = score_trace(case, trace, wall_s)
        except Exception as exc:  # the eval's one catch: a broken scenario must not hide the others' scores
            log.exception("eval scenario %s failed", case.name)
            result = _failed(case, f"{type(exc).__name__}: {exc}", time.monotonic() - started)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return EvalReport(uuid.uuid4().hex, started_at, mode, model, tuple(results))


def _failed(case: EvalCase, error: str, wall_s: float) -> CaseResult:
    return CaseResult(case.name, False, case.must_name, "", "", 0, "error", False, 0, 0, round(wall_s, 2),
                      0, 0, 0, 0, (), error=error)


def report_to_dict(report: EvalReport) -> dict[str, Any]:
    """JSON-ready report with per-scenario rows and totals (what the trace store keeps)."""
    rows = []
    for r in report.results:
        row = asdict(r)
        row["format_error_rate"] = round(r.format_error_rate, 3)
        row["tool_error_rate"] = round(r.tool_error_rate, 3)
        rows.append(row)
    return {
        "run_id": report.run_id,
        "started_at": report.started_at,
        "mode": report.mode,
        "model": report.model,
        "scenarios": rows,
        "totals": _totals(report.results),
    }


def _totals(results: Sequence[CaseResult]) -> dict[str, Any]:
    steps = sum(r.steps for r in results)
    tool_calls = sum(r.tool_calls for r in results)
    tool_errors = sum(r.tool_errors for r in results)
    return {
        "scenarios": len(results),
        "hits": sum(r.hit for r in results),
        "hit_rate": round(sum(r.hit for r in results) / len(results), 3) if results else 0.0,
        "steps": steps,
        "prompt_tokens": sum(r.prompt_tokens for r in results),
        "completion_tokens": sum(r.completion_tokens for r in results),
        "wall_s": round(sum(r.wall_s for r in results), 2),
        "format_error_rate": round(sum(r.format_errors for r in results) / steps, 3) if steps else 0.0,
        "tool_error_rate": round(tool_errors / tool_calls, 3) if tool_calls else 0.0,
        "tool_errors": tool_errors,
        "tool_errors_corrected": sum(r.tool_errors_corrected for r in results),
        "unverified": sum(len(r.unverified) for r in results),
    }


_COLUMNS = ("scenario", "hit", "steps", "stop", "tokens in/out", "wall s", "fmt err", "tool err (fixed)", "unverified")


def report_to_table(report: EvalReport) -> str:
    """A fixed-width table, one row per scenario plus the total, then the misses explained."""
    rows = [_row(r) for r in report.results]
    t = _totals(report.results)
    rows.append((
        "TOTAL", f"{t['hits']}/{t['scenarios']}", str(t["steps"]), "", f"{t['prompt_tokens']}/{t['completion_tokens']}",
        f"{t['wall_s']:.1f}", f"{t['format_error_rate']:.0%}",
        f"{t['tool_error_rate']:.0%} ({t['tool_errors_corrected']}/{t['tool_errors']})", str(t["unverified"]),
    ))
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(_COLUMNS)]
    lines = [f"eval {report.mode}{' ' + report.model if report.model else ''} · run {report.run_id[:8]}"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in (_COLUMNS, *rows)]
    for r in report.results:
        if not r.hit:
            why = r.error or (f"missing: {', '.join(r.missing)}" if r.missing else "did not say there is no incident")
            lines.append(f"miss {r.scenario}: {why}")
        if r.unverified:
            lines.append(f"unverified in {r.scenario}: {', '.join(r.unverified)}")
    return "\n".join(lines)


def _row(r: CaseResult) -> tuple[str, ...]:
    return (
        r.scenario, "yes" if r.hit else "NO", str(r.steps), r.stop_reason,
        f"{r.prompt_tokens}/{r.completion_tokens}", f"{r.wall_s:.1f}", f"{r.format_error_rate:.0%}",
        f"{r.tool_error_rate:.0%} ({r.tool_errors_corrected}/{r.tool_errors})", str(len(r.unverified)),
    )


def runs_to_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """Stored eval runs, newest first, one line each: the history `opsbot eval --history` compares."""
    lines = [f"{'run':<10} {'started':<20} {'mode':<9} {'model':<24} {'hits':>7} {'steps':>6} {'tokens':>9} "
             f"{'unverified':>10}"]
    for run in runs:
        t = run.get("totals", {})
        hits = f"{t.get('hits', 0)}/{t.get('scenarios', 0)}"
        tokens = int(t.get("prompt_tokens", 0)) + int(t.get("completion_tokens", 0))
        lines.append(
            f"{str(run.get('run_id', ''))[:8]:<10} {str(run.get('started_at', ''))[:19]:<20} "
            f"{run.get('mode', ''):<9} {(run.get('model') or '-')[:24]:<24} {hits:>7} {t.get('steps', 0):>6} "
            f"{tokens:>9,} {t.get('unverified', 0):>10}"
        )
    return "\n".join(lines) if runs else "no eval runs stored yet: run `opsbot eval`"

