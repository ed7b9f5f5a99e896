"""The final message of a run, composed here and only here, written to be read at 3 a.m. Pure, within Slack's limits.

A diagnosis opens with the KIND of answer: "Likely cause" with words for how much evidence lines up, or "Cause
confirmed by …" only when the trace carries a confirmation from the tools' evidence (`Trace.confirmed_by`); the
answer's own words never make one, and a guess never gets a ✅. Then the cause in a sentence or two, at most five
evidence bullets that are findings (bot/slack/delivery/findings.py) with times read against the deploy, and what to
check next; the footer and buttons come last (Block Kit parts from bot/slack/delivery/render.py). Help and chit-chat
are plain: the text, no footer, no buttons but "🔎 Investigate" when the message may have asked for a diagnosis.
`FinalMessage` holds every form Slack takes: `text` and `blocks` for a posted or edited message, `markdown` and
`tail` for chat.stopStream (which takes no `text`). Its parts are composed once, each untrusted text through the
outbound pass once per form it appears in, and only for the form a delivery sends.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from functools import cached_property
from typing import Any

from bot.chart.sparkline import sparkline
from bot.chart.spec import chart_spec
from bot.engine.types import StopReason, Trace
from bot.safety.outbound import slack_markdown, slack_mrkdwn
from bot.slack.delivery.findings import Finding, deploy_time, finding_from_step
from bot.slack.delivery.render import (
    ANSWER_CHARS,
    MAX_TEXT_CHARS,
    context,
    controls,
    investigate_controls,
    meta_line,
    mrkdwn_escape,
    section,
    trim,
)

MAX_EVIDENCE = 5
SUMMARY_CHARS = 420
_STOP_EXPLAINED = {
    StopReason.MAX_STEPS: "the step limit was reached",
    StopReason.TIME_BUDGET: "the time budget ran out",
    StopReason.TOKEN_BUDGET: "the token budget ran out",
    StopReason.REPEATED_ACTION: "the model repeated the same action",
    StopReason.FORMAT_ERRORS: "the model's replies could not be read",
    StopReason.LLM_UNAVAILABLE: "the LLM was unavailable",
    StopReason.INTERRUPTED: "opsbot was restarted or stopped before it finished",
}
CONFIRMED_CHARS = 240
STREAM_TEXT_CHARS = 12_000  # chat.stopStream's markdown_text limit
_NOTE_LINE = re.compile(r"^_.*_$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_STAMP = re.compile(r"\b(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d)(?::\d\d)?(?P<zone> \S{1,9} \(\d\d:\d\d UTC\)|Z| UTC)?")
_EVIDENCE_ORDER = ("change", "deploy", "diff", "logs")
_PLAYBOOK_NOTE = "deterministic playbook"
# A quick answer to a message the classifier gave at least one chance in ten of asking for an investigation offers
# one. Chosen by that reading, not tuned on any split; the blind splits measure what it catches.
OFFER_INVESTIGATE_ABOVE = 0.1
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?:-[0-9A-Za-z.]+)?(?![\w])")


class FinalMessage:
    """One trace's final message; each form is composed when first read, from parts composed once."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.plain, self.quick = is_plain(trace), trace.protocol == "single" or not trace.steps
        self.findings = [] if self.plain else _findings(trace)  # a quick lookup's fallback text reads them too
        self.next_step = "" if self.plain or self.quick else next_check(trace, self.findings)
        spec = None if self.plain or self.quick else chart_spec(trace)  # the chart's text fallback, always kept
        line = sparkline(spec) if spec is not None else ""
        self.spark = f"📈 {line}" if line else ""

    @cached_property
    def text(self) -> str:
        """The top-level `text` fallback (notifications, search, screen readers): short, never empty."""
        trace = self.trace
        if self.plain:
            return trim(slack_mrkdwn(trace.answer) or "…", MAX_TEXT_CHARS - 100)
        if not trace.complete:
            kind = f"Partial answer ({trace.stop_reason.value})"
        elif trace.confirmed_by:  # what confirmed it is in the message; the fallback stays short
            kind = "Cause confirmed"
        else:
            kind = re.sub(r"[*`]", "", _headline(trace, self.findings)).split(" ", 1)[-1].split(":")[0]
        return trim(f"{kind}: {self._summary_mrkdwn or 'no answer'}", 600)

    @cached_property
    def blocks(self) -> list[dict[str, Any]]:
        """Plain for help and chit-chat; a quick lookup's answer; else kind + cause, evidence, next step; then
        the footer and the controls."""
        if self.plain or self.quick:
            more = "" if self.plain else f"\n\n… ({_more(self.trace)})"
            text = (
                trim(self._answer_markdown, ANSWER_CHARS, more) if more else trim(self._answer_markdown, ANSWER_CHARS)
            )
            return [{"type": "markdown", "text": text}, *self.tail]
        blocks = [section(f"{_headline(self.trace, self.findings)}\n{self._summary_mrkdwn}")]
        bullets = [f"• {mrkdwn_escape(f.text)}" for f in self._evidence] + [mrkdwn_escape(self.spark)] * bool(
            self.spark
        )
        body = "\n".join([*bullets, f"*Next:* {mrkdwn_escape(self.next_step)}" if self.next_step else ""]).strip()
        return [*blocks, *([section(body)] if body else []), *self.tail]

    @cached_property
    def markdown(self) -> str:
        """chat.stopStream's markdown text: the answer itself, which notifications and screen readers read."""
        if self.plain or self.quick:
            return str(self.blocks[0]["text"])
        parts = [
            _headline(self.trace, self.findings, markdown=True),
            slack_markdown(self._summary),
            "\n".join(f"- {slack_markdown(f.text)}" for f in self._evidence),
            slack_markdown(self.spark),
            f"**Next:** {slack_markdown(self.next_step)}" if self.next_step else "",
        ]
        return trim("\n\n".join(p for p in parts if p), STREAM_TEXT_CHARS)

    @cached_property
    def tail(self) -> list[dict[str, Any]]:
        """The footer and the buttons, under either form (under a plain answer, at most "🔎 Investigate")."""
        trace = self.trace
        if self.plain:
            return [investigate_controls(trace.trace_id)] if offers_investigation(trace) else []
        return [context(*_footer(trace)), controls(trace.trace_id, investigate=offers_investigation(trace))]

    @cached_property
    def _answer_markdown(self) -> str:
        return slack_markdown(self.trace.answer.strip()) or "_No answer was produced._"

    @cached_property
    def _summary(self) -> str:
        return _readable_times(summary(self.trace), self.trace)

    @cached_property
    def _summary_mrkdwn(self) -> str:
        return mrkdwn_escape(self._summary)

    @cached_property
    def _evidence(self) -> list[Finding]:
        return evidence(self.findings)


def trace_to_text(trace: Trace) -> str:
    """The final message's `text` fallback."""
    return FinalMessage(trace).text


def trace_to_blocks(trace: Trace) -> list[dict[str, Any]]:
    """The final message's blocks, for chat.postMessage or chat.update."""
    return FinalMessage(trace).blocks


def trace_to_stream_end(trace: Trace) -> tuple[str, list[dict[str, Any]]]:
    """The final message as chat.stopStream takes it: (markdown text, the footer and buttons under it)."""
    message = FinalMessage(trace)
    return message.markdown, message.tail


def is_plain(trace: Trace) -> bool:
    """Help, chit-chat and the read-only answer to a request to act: plain text."""
    return trace.intent is not None and trace.intent.route in ("help", "chitchat", "act")


def offers_investigation(trace: Trace) -> bool:
    """Whether a quick answer carries "🔎 Investigate": a missed diagnosis is then one click from the real one.

    Every lookup answered on the quick lane (a one-fact answer invites "and why?"), and a plain answer (chit-chat,
    help, a refusal to act) when the classifier gave the message at least OFFER_INVESTIGATE_ABOVE of being a
    diagnosis. Never when a person or a rule chose the route (the choice buttons, an escalation: tier "rules").
    """
    intent = trace.intent
    if intent is None or intent.tier == "rules" or intent.route == "diagnose":
        return False
    if intent.route == "lookup":
        return trace.protocol == "single" or not trace.steps
    return intent.diagnose_probability >= OFFER_INVESTIGATE_ABOVE


def is_guess(trace: Trace) -> bool:
    """A diagnosis whose headline is "Likely cause": it must never get a ✅, in the message or as a reaction."""
    investigated = trace.protocol != "single" and bool(trace.steps) and not is_plain(trace)
    return investigated and trace.complete and not trace.confirmed_by


def summary(trace: Trace) -> str:
    """The cause in a sentence or two: the answer's first real paragraph, without notes or a "Likely cause:" label."""
    paragraphs = [p.strip() for p in trace.answer.split("\n\n") if p.strip()]
    prose = [p for p in paragraphs if not _NOTE_LINE.match(p) and not p.lstrip().startswith(("-", "*", "•"))]
    first = re.sub(r"^\W*(likely |root )?cause\W*:\s*", "", (prose or paragraphs or [""])[0], flags=re.IGNORECASE)
    sentences = _SENTENCE_END.split(" ".join(first.split()))
    text = sentences[0]
    if len(sentences) > 1 and len(text) + len(sentences[1]) < 200:
        text += " " + sentences[1]
    return trim(text, SUMMARY_CHARS, "…")


def evidence(findings: Sequence[Finding]) -> list[Finding]:
    """At most five findings that point somewhere: the first of each kind in order, then further changes/logs."""
    telling = [f for f in findings if f.kind in _EVIDENCE_ORDER]
    firsts = [first for kind in _EVIDENCE_ORDER if (first := next((f for f in telling if f.kind == kind), None))]
    rest = [f for f in telling if f not in firsts]
    return (firsts + rest)[:MAX_EVIDENCE]


def next_check(trace: Trace, findings: Sequence[Finding]) -> str:
    """What to check or do next, from what was found."""
    if not trace.complete:
        return "verify the evidence above by hand before acting; Re-run may get further"
    deploys = [f for f in findings if f.kind == "deploy"]
    diffs = [f for f in findings if f.kind == "diff"]
    symptom = next((f for f in findings if f.kind == "change"), None)
    if deploys:
        watch = f" and watch {symptom.subject}" if symptom else ""
        revert = f" (or revert {diffs[0].subject})" if diffs else ""
        return f"check whether rolling back {deploys[0].subject}{revert} restores service{watch}"
    if symptom:
        return f"look for what changed at {symptom.at} besides deploys (traffic, config, a dependency)"
    return "nothing stood out; open Show full trace for the checks that ran"


def _findings(trace: Trace) -> list[Finding]:
    """What each step found, read against the deploy the answer names as the cause (when it names one)."""
    named = _VERSION.search(summary(trace))
    version = named.group(0) if named else ""
    deploy_at = deploy_time(trace.steps, version)
    found = [finding_from_step(s, deploy_at, version) for s in trace.steps if s.action not in ("", "finish")]
    # the named deploy's own record and diff come first, so evidence and the next step are about the cause
    return sorted(found, key=lambda f: f.kind in ("deploy", "diff") and bool(version) and f.version != version)


def _headline(trace: Trace, findings: Sequence[Finding], *, markdown: bool = False) -> str:
    """The kind of answer, in mrkdwn (a section) or in standard markdown (a stream's text)."""
    b = "**" if markdown else "*"
    if not trace.complete:
        if trace.stop_reason is StopReason.FINISH:
            return f"⚠️ {b}Partial answer{b}. Verify before acting."
        why = _STOP_EXPLAINED.get(trace.stop_reason, trace.stop_reason.value)
        return f"⚠️ {b}Partial answer{b}: stopped because {why} (`{trace.stop_reason.value}`). Verify before acting."
    if trace.confirmed_by:
        escape = slack_markdown if markdown else mrkdwn_escape
        return f"✅ {b}Cause confirmed by{b} {escape(trim(trace.confirmed_by, CONFIRMED_CHARS, '…'))}"
    return f"🔎 {b}Likely cause{b}, {_confidence_words(findings)}"


def _confidence_words(findings: Sequence[Finding]) -> str:
    kinds = {f.kind for f in findings}
    names = {"change": "the metrics", "deploy": "a deploy", "diff": "its diff", "logs": "the error logs"}
    agree = [names[k] for k in _EVIDENCE_ORDER if k in kinds]
    listed = ", ".join(agree[:-1]) + f" and {agree[-1]}" if len(agree) > 1 else "".join(agree)
    if len(agree) >= 3:
        return f"fairly confident: {listed} line up in time (not verified)"
    if len(agree) == 2:
        return f"moderately confident: only {listed} line up"
    return "low confidence: little evidence points at it"


def _footer(trace: Trace) -> list[str]:
    notes = [trim(mrkdwn_escape(n), 200) for n in trace.notes if _PLAYBOOK_NOTE not in n][:2]
    how = "playbook, no model" if trace.protocol == "playbook" else trace.model or trace.protocol
    t = trace.totals
    line = f"{how} · {len(trace.steps)} steps · {t.elapsed_ms / 1000:.1f} s"
    line = line if trace.protocol == "playbook" else meta_line(trace).replace(f" · trace `{trace.trace_id}`", "")
    return [f"{line} · full trace: `opsbot traces show {trace.trace_id}`", *notes]


def _readable_times(text: str, trace: Trace) -> str:
    """ "2026-11-30 15:02 UTC" -> "yesterday 15:02 UTC" (or "15:02 UTC" the same day; the date otherwise); a time
    shown in the team's zone ("2026-11-30 16:02 CET (15:02 UTC)") keeps it, and its day is that zone's."""

    def readable(match: re.Match[str]) -> str:
        day, hhmm, zone = match.group(1), match.group(2), match.group("zone") or ""
        tail, today = (zone, _local_day(trace.started_at, hhmm, zone)) if "(" in zone else (" UTC", trace.started_at)
        if not today or day == today[:10]:
            return f"{hhmm}{tail}"
        return f"yesterday {hhmm}{tail}" if _is_day_before(day, today[:10]) else f"{day} {hhmm}{tail}"

    return _STAMP.sub(readable, text).replace("at yesterday ", "yesterday at ")


def _local_day(started_at: str, local: str, zone: str) -> str:
    """The day the run started in the zone a stamp shows: its offset is its local clock minus its UTC clock."""
    ahead = (int(local[:2]) - int(zone[-10:-8])) * 60 + int(local[3:]) - int(zone[-7:-5])
    try:
        return (datetime.fromisoformat(started_at) + timedelta(minutes=(ahead + 720) % 1440 - 720)).isoformat()
    except ValueError:
        return ""


def _is_day_before(day: str, today: str) -> bool:
    try:
        return date.fromisoformat(day) == date.fromisoformat(today) - timedelta(days=1)
    except ValueError:
        return False


def _more(trace: Trace) -> str:
    return f"the full answer: Show full trace or `opsbot traces show {trace.trace_id}`"
