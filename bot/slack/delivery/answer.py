"""The final message of a run, written to be read at 3 a.m. Pure, and within Slack's limits.

A diagnosis opens with the KIND of answer: "Likely cause" with words for how much evidence lines up, or "Cause
confirmed by …" only when the trace carries a confirmation from the tools' evidence (`Trace.confirmed_by`,
bot/playbook/confirmation.py); the answer's own words never make one. Never a ✅ on a guess. Then the cause in a
sentence or two, at most five evidence bullets that are findings (not queries) with times read against the deploy,
and what to check next. The steps themselves were shown once, as task cards; the full trace sits behind "Show full
trace" and `opsbot traces show`. Help and chit-chat are plain: just the text, no footer, and no buttons but
"🔎 Investigate" when the message may have asked for a diagnosis (offers_investigation). Every message
has a short `text` fallback for notifications and screen readers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

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
_STAMP = re.compile(r"\b(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d)(?::\d\d)?(?:Z| UTC)?")
_EVIDENCE_ORDER = ("change", "deploy", "diff", "logs")
_PLAYBOOK_NOTE = "deterministic playbook"
# A quick answer to a message the classifier gave at least one chance in ten of asking for an investigation offers
# one. Chosen by that reading, not tuned on any split; the blind splits measure what it catches.
OFFER_INVESTIGATE_ABOVE = 0.1
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?:-[0-9A-Za-z.]+)?(?![\w])")


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


def trace_to_text(trace: Trace) -> str:
    """The top-level `text` fallback (notifications, search, screen readers): short, never empty."""
    if is_plain(trace):
        return trim(slack_mrkdwn(trace.answer) or "…", MAX_TEXT_CHARS - 100)
    kind = re.sub(r"[*`]", "", _headline(trace, _findings(trace))).split(" ", 1)[-1].split(":")[0]
    if trace.confirmed_by:  # what confirmed it is in the message; the fallback stays short
        kind = "Cause confirmed"
    if not trace.complete:
        kind = f"Partial answer ({trace.stop_reason.value})"
    return trim(f"{kind}: {_readable_times(slack_mrkdwn(summary(trace)), trace) or 'no answer'}", 600)


def trace_to_blocks(trace: Trace) -> list[dict[str, Any]]:
    """The final message: plain for help and chit-chat; else kind + cause, evidence, next step, footer, controls."""
    answer = slack_markdown(trace.answer.strip()) or "_No answer was produced._"
    if is_plain(trace):
        plain = [{"type": "markdown", "text": trim(answer, ANSWER_CHARS)}]
        return [*plain, investigate_controls(trace.trace_id)] if offers_investigation(trace) else plain
    findings = _findings(trace)
    if trace.protocol == "single" or not trace.steps:  # a quick lookup: its answer is the message
        blocks = [{"type": "markdown", "text": trim(answer, ANSWER_CHARS, f"\n\n… ({_more(trace)})")}]
    else:
        blocks = [section(f"{_headline(trace, findings)}\n{mrkdwn_escape(_readable_times(summary(trace), trace))}")]
        bullets = [f"• {mrkdwn_escape(f.text)}" for f in evidence(findings)]
        next_step = next_check(trace, findings)
        body = "\n".join([*bullets, f"*Next:* {mrkdwn_escape(next_step)}" if next_step else ""]).strip()
        if body:
            blocks.append(section(body))
    blocks.append(context(*_footer(trace)))
    blocks.append(controls(trace.trace_id, investigate=offers_investigation(trace)))
    return blocks


def trace_to_stream_end(trace: Trace) -> tuple[str, list[dict[str, Any]]]:
    """The final message as chat.stopStream takes it: (markdown text, blocks under it).

    chat.stopStream has no `text` argument (Slack's reference: channel, ts, chunks, markdown_text of at most 12,000
    characters, blocks rendered below them, metadata, session_status). So the answer itself goes as markdown text,
    which notifications, search and screen readers read, and only the footer and the buttons go as blocks.
    """
    blocks = trace_to_blocks(trace)
    tail = [block for block in blocks if block["type"] in ("context", "actions")]
    if is_plain(trace) or trace.protocol == "single" or not trace.steps:
        return str(blocks[0]["text"]), tail
    findings = _findings(trace)
    next_step = next_check(trace, findings)
    parts = [
        _headline(trace, findings, markdown=True),
        slack_markdown(_readable_times(summary(trace), trace)),
        "\n".join(f"- {slack_markdown(f.text)}" for f in evidence(findings)),
        f"**Next:** {slack_markdown(next_step)}" if next_step else "",
    ]
    return trim("\n\n".join(p for p in parts if p), STREAM_TEXT_CHARS), tail


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
        what = deploys[0].text.split(":", 1)[1].split(" at ")[0].strip()  # "order v2.8.1 (from v2.8.0)"
        what = re.sub(r" \(from (\S+)\)", r" to \1", what)
        watch = f" and watch {_subject(symptom.text)}" if symptom else ""
        revert = f" (or revert {diffs[0].text.removeprefix('diff: ').split(';')[0].rsplit(' ', 3)[0]})" if diffs else ""
        return f"check whether rolling back {what}{revert} restores service{watch}"
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
    """ "2026-11-30 15:02 UTC" -> "yesterday 15:02 UTC" (or "15:02 UTC" the same day; the date otherwise)."""
    today = trace.started_at[:10]

    def readable(match: re.Match[str]) -> str:
        day, hhmm = match.group(1), match.group(2)
        if day == today or not today:
            return f"{hhmm} UTC"
        return f"yesterday {hhmm} UTC" if _is_day_before(day, today) else f"{day} {hhmm} UTC"

    return _STAMP.sub(readable, text).replace("at yesterday ", "yesterday at ")


def _is_day_before(day: str, today: str) -> bool:
    from datetime import date, timedelta

    try:
        return date.fromisoformat(day) == date.fromisoformat(today) - timedelta(days=1)
    except ValueError:
        return False


def _subject(change_text: str) -> str:
    """ "order p99 latency 202 ms → …" -> "order p99 latency"."""
    return re.split(r" -?\d", change_text, maxsplit=1)[0]


def _more(trace: Trace) -> str:
    return f"the full answer: Show full trace or `opsbot traces show {trace.trace_id}`"
