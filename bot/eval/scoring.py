"""Scoring one finished run: did the answer name the scenario's facts, and how did the run get there."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from bot.engine.types import Trace
from bot.eval.case import EvalCase
from bot.safety.grounding import unverified_claims

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
# Clause boundaries inside a headline: a sentence end, a semicolon, a colon or comma before a space, brackets,
# a dash, and the "but/while/whereas" that turns from one claim to another. A version's dots, a time's colon
# and a thousands comma stay inside their clause.
_CLAUSE_RX = re.compile(r"[.;:!?,](?=\s|$)|[()\[\]]|\s[-–—]\s|\b(?:but|while|whereas|although)\b", re.IGNORECASE)
# Words before a name that rule it out: "not the 14:02 deploy of X", "rather than X", "X ruled out" ...
_RULED_OUT_BEFORE_RX = re.compile(
    r"\b(?:not|no|never|neither|nor|rather than|instead of|ruled? out|rules out|excluding|except|unlike)\b",
    re.IGNORECASE,
)
# ... and after it: "X is not the cause", "X is most likely not the cause", "X is not dropping them", "X came after
# the onset", "X cannot explain it".
_RULED_OUT_AFTER_RX = re.compile(
    r"^\W*(?:\S+\s+){0,3}?(?:(?:is|was|were|are)\s+(?:\w+\s+){0,2}not\s+(?:the|a|an|to|what|why|related|behind|\w+ing)\b"
    r"|isn't|wasn't|did(?:\s+not|n't)\s+(?:cause|break|trigger|touch|affect|change)|came after|(?:is|was) unrelated"
    r"|ruled out"
    r"|(?:cannot|can't|does(?:\s+not|n't)|could(?:\s+not|n't))\s+explain)",
    re.IGNORECASE,
)


_BRACKET_RX = re.compile(r"\s*\(([^()]*)\)\s*")


# Where the headline (the named cause) ends: the first section an answer lists its support under.
_SECTION_RX = re.compile(
    r"^\s*(?:[*_#>-]\s*)*(?:evidence|still unknown|established|unknown|confidence|next steps?|what to check)\b",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class CaseResult:
    """`hit` is the strict score: every fact in the headline (the named cause). `evidence_hit` is the lenient one:
    every fact somewhere in the answer, the evidence included. A fact found only in the evidence is not a hit.
    A headline that blames a decoy (`blamed`, from the scenario's must_not_name) is a miss in both scores, even when
    it names the cause too: blaming two things is not an answer. A decoy named in a clause that rules it out
    ("not the 14:02 deploy of X") is not blamed."""

    scenario: str
    hit: bool
    missing: tuple[str, ...]  # facts the headline does not name
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
    evidence_hit: bool = False
    headline: str = ""
    blamed: tuple[str, ...] = ()  # decoys the headline blames

    @property
    def format_error_rate(self) -> float:
        return self.format_errors / self.steps if self.steps else 0.0

    @property
    def tool_error_rate(self) -> float:
        return self.tool_errors / self.tool_calls if self.tool_calls else 0.0


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


def headline_from_answer(answer: str) -> str:
    """The named cause: the answer up to its first support section ("Evidence:", "Still unknown:", ...)."""
    match = _SECTION_RX.search(answer)
    head = answer[: match.start()] if match else answer.split("\n\n", 1)[0]
    return head.strip()


def blames(fact: str, headline: str) -> bool:
    """Whether the headline blames `fact`: names it in a clause that does not rule it out. "Not the 14:02 deploy
    of X" or "X came after the onset" mentions X to clear it; "X raised the pool size" blames it. A bracket belongs
    to the clause around it: "the key rotation (auth/v3.8.2, 18:56) is not the mechanism" clears both."""
    return _blamed(fact, headline) and _blamed(fact, _brackets_lifted(headline, fact))


def _blamed(fact: str, headline: str) -> bool:
    return any(_blamed_in_clause(fact, clause) for clause in _CLAUSE_RX.split(headline) if clause)


def _brackets_lifted(headline: str, fact: str) -> str:
    """The headline with each bracket read as part of its host clause: one that names the fact stands as the fact
    alone, any other is dropped."""
    return _BRACKET_RX.sub(lambda m: f" {fact} " if fact_named(fact, m.group(1)) else " ", headline)


def _blamed_in_clause(fact: str, clause: str) -> bool:
    if not fact_named(fact, clause):
        return False
    end = next(k for k in range(1, len(clause) + 1) if fact_named(fact, clause[:k]))
    start = next(j for j in range(end, -1, -1) if fact_named(fact, clause[j:end]))
    ruled_out = _RULED_OUT_BEFORE_RX.search(clause[:start]) or _RULED_OUT_AFTER_RX.search(clause[end:])
    return ruled_out is None


def says_no_incident(answer: str) -> bool:
    """The answer states there is no incident and does not also blame a cause."""
    return bool(_NO_INCIDENT_RX.search(answer)) and not _CLAIMS_CAUSE_RX.search(answer)


def corrected_tool_errors(trace: Trace) -> int:
    """Tool errors whose very next step called the same tool again and got an answer."""
    steps = trace.steps
    return sum(
        1
        for step, following in itertools.pairwise(steps)
        if step.status in _TOOL_ERROR_STATUSES
        and following.action == step.action
        and following.status in ("ok", "no_data")
    )


def score_trace(case: EvalCase, trace: Trace, wall_s: float) -> CaseResult:
    """Score one finished run against its case."""
    headline = headline_from_answer(trace.answer)
    quiet = not case.no_incident or (says_no_incident(headline) and says_no_incident(trace.answer))
    missing = tuple(f for f in case.must_name if not fact_named(f, headline))
    blamed = tuple(f for f in case.must_not_name if blames(f, headline))
    anywhere = all(fact_named(f, trace.answer) for f in case.must_name)
    evidence = [trace.question, *(s.observation for s in trace.steps)]
    totals = trace.totals
    tool_steps = [s for s in trace.steps if s.action not in ("", "finish")]
    return CaseResult(
        scenario=case.name,
        hit=not missing and quiet and not blamed,
        missing=missing,
        blamed=blamed,
        evidence_hit=anywhere and quiet and not blamed,
        headline=headline[:300],
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


def failed_result(case: EvalCase, error: str, wall_s: float) -> CaseResult:
    """The result of a run that raised instead of answering: a miss with every fact missing and the error kept."""
    return CaseResult(
        scenario=case.name,
        hit=False,
        missing=case.must_name,
        route="",
        protocol="",
        steps=0,
        stop_reason="error",
        complete=False,
        prompt_tokens=0,
        completion_tokens=0,
        wall_s=round(wall_s, 2),
        format_errors=0,
        tool_calls=0,
        tool_errors=0,
        tool_errors_corrected=0,
        unverified=(),
        error=error,
    )
