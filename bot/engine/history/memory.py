"""The steps a run has taken, as the model is re-sent them: one line per older step, the newest with its result.

A line keeps the step's Thought (compressed: its first sentence, what the result showed, the way a Thought
starts; the call says the rest), the call (values in the order given, a start and end as one span) and the key
finding of its result (digest.py's gist of the lines its data cites; for a diff its changed lines, up to
_DIFF_GIST_CHARS): the reasoning stays explicit and the evidence in front of the model, in a fraction of the
tokens of the exchange. A finding an earlier line gave is not said again, and the day most times fall on is said
once, in the heading. The newest step keeps its whole Thought and its result in full. The lines sit inside one
<observation> fence, as every tool result does: a finding is tool output, and a log line can say anything.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bot.engine.history.digest import Reading, gist_findings, is_diff, observation_gist
from bot.engine.history.evidence import reading_of
from bot.engine.types import Step

GIST_CHARS = 400  # a step's key finding on its one line (here and in context.step_to_line)
_DIFF_GIST_CHARS = 600  # a diff's changed lines are the finding itself (a setting, a migration's DROP)
_NEW_GIST_CHARS = 600  # so are the log lines that began at the onset: the first few, with what they name
_THOUGHT_CHARS = 160  # of the first sentence
_PLAIN_VALUE = re.compile(r"[\w.:/@*+-]+")  # shown unquoted in one-line steps: no spaces, commas or quotes
_WHOLE_MINUTE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:00Z")
_DAY_OF_TIME = re.compile(r"\b(\d{4}-\d\d-\d\d)T(?=\d\d:\d\d)")  # the day of an ISO time, `T` included
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def old_steps_text(steps: Sequence[Step]) -> str:
    """Older steps as the model's memory, one line each: `#n Thought => call -> finding` under a heading."""
    lines, shown = [], set[str]()
    for step in steps:
        reading = reading_of(step.observation, step.data)
        findings = gist_findings(reading, _gist_chars(reading), skip=shown)
        shown.update(findings)
        gist = " | ".join(findings) or observation_gist(reading, GIST_CHARS)
        thought = first_sentence(step.thought)
        status = "" if step.status == "ok" else f"{step.status}: "
        lines.append(f"#{step.index} {thought + ' => ' if thought else ''}{memory_call_text(step)} -> {status}{gist}")
    text = "\n".join(lines)
    days = Counter(_DAY_OF_TIME.findall(text))
    if not days:
        return f"Earlier steps (Thought => call -> result):\n{fence_observation(text)}"
    day = days.most_common(1)[0][0]
    text = re.sub(rf"\b{day}T(?=\d\d:\d\d)", "", text)
    return f"Earlier steps (Thought => call -> result; {day} unless dated):\n{fence_observation(text)}"


def fence_observation(text: str) -> str:
    """Tool output inside tags, so the prompt can tell the model it is data and not instructions.

    Older steps' lines are fenced too: their findings are tool output (a log line can say anything)."""
    return f"<observation>\n{text.replace('</observation>', '</ observation>')}\n</observation>"


def newest_step_text(steps: Sequence[Step], results: Sequence[str]) -> str:
    """The newest step(s): the whole Thought and the call, then each result as rendered (fenced, cut if long)."""
    calls = [
        f"#{s.index} {' '.join(s.thought.split()) + ' => ' if s.thought.strip() else ''}{memory_call_text(s)}"
        for s in steps
    ]
    return "\n".join(["Newest step:", *calls, *results])


def memory_call_text(step: Step) -> str:
    """`query_logs(order, ERROR, 14:55Z..15:35Z)`: the values in the order given (a start and end as one span)."""
    if step.status == "format_error" or not step.action:
        return "(unreadable reply)"
    values = {k: plain_value(v) for k, v in step.args.items()}
    if "start" in values and "end" in values:
        start, end = values["start"], values.pop("end")
        same_day = _DAY_OF_TIME.match(start) and start[:11] == end[:11]
        values["start"] = f"{start}..{end[11:] if same_day else end}"  # 2026-11-30T14:05Z..16:05Z
    return f"{step.action}({', '.join(values.values())})"


def _gist_chars(reading: Reading) -> int:
    if is_diff(reading) or any(line.role == "suspect" for _, line in reading.cited):
        return _DIFF_GIST_CHARS  # a ranking's runner-up is a finding too: the answer weighs the leader against it
    return _NEW_GIST_CHARS if any(line.role == "new" for _, line in reading.cited) else GIST_CHARS


def compressed_thought(thought: str, max_chars: int = _THOUGHT_CHARS) -> str:
    """A Thought on one line, cut to its first sentences within `max_chars` (else at a word, marked `…`)."""
    text = " ".join(thought.split())
    if len(text) <= max_chars:
        return text
    kept = ""
    for sentence in _SENTENCE_END.split(text):
        if len(kept) + len(sentence) + 1 > max_chars:
            break
        kept = f"{kept} {sentence}".strip()
    return kept or text[: max_chars - 1].rsplit(" ", 1)[0] + "…"


def first_sentence(thought: str) -> str:
    """What the results showed, the way a Thought starts: its first sentence (within _THOUGHT_CHARS)."""
    return compressed_thought(_SENTENCE_END.split(" ".join(thought.split()), maxsplit=1)[0])


def plain_value(value: Any) -> str:
    """A call's value as a line shows it: unquoted when plain, a whole-minute time without its seconds."""
    if isinstance(value, str) and _WHOLE_MINUTE.fullmatch(value):  # 2026-11-30T14:05:00Z -> 2026-11-30T14:05Z
        value = value[:-4] + "Z"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text[1:-1] if isinstance(value, str) and _PLAIN_VALUE.fullmatch(value) else text
