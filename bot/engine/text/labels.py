"""Label reading for text-ReAct replies: find Thought / Action / Action Input / Final Answer / Observation.

Models write the same labels in many spellings: markdown bold (`**Thought:**`), any case, numbered
("Thought 2:"), full-width colons, Chinese (思考 / 行动 / 行动输入 / 最终答案), or XML-style tags. This module
turns all of them into an ordered list of Segments; deciding what the segments mean is the parser's job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["thought", "action", "action_input", "final_answer", "observation"]

# Order matters: "action input" must be tried before "action".
_SPELLINGS: tuple[tuple[Kind, str], ...] = (
    ("action_input", r"action[ _-]*(?:\d+[ ]*)?input|行动输入|动作输入|tool[ _-]*input"),
    ("final_answer", r"final[ _-]*answer|最终答案|最终回答"),
    ("thought", r"thoughts?|思考|想法"),
    ("action", r"action|行动|动作"),
    ("observation", r"observations?|观察|观测"),
)
_KIND_PATTERNS = tuple((kind, re.compile(spelling, re.I)) for kind, spelling in _SPELLINGS)

_DECOR = r"[ \t]*(?:\*{1,2}|_{1,2})?[ \t]*"  # markdown bold/italic around a label or its colon
_LABEL = re.compile(
    r"^[ \t>#-]*(?:\d{1,2}[.)][ \t]+)?(?:\*{1,2}|_{1,2})?[ \t]*"  # quote, heading, bullet, "1." list
    r"(?P<label>" + "|".join(s for _, s in _SPELLINGS) + r")"
    r"(?:[ \t]*\d+)?" + _DECOR + r"[:：]" + _DECOR,
    re.I | re.M,
)

# XML-style tags become ordinary labels, so one reader serves both styles.
_TAG_LABELS: dict[str, str] = {
    "thought": "Thought",
    "thinking": "Thought",
    "action": "Action",
    "tool": "Action",
    "action_input": "Action Input",
    "action-input": "Action Input",
    "input": "Action Input",
    "args": "Action Input",
    "final_answer": "Final Answer",
    "final-answer": "Final Answer",
    "answer": "Final Answer",
    "observation": "Observation",
    "tool_call": "Action",  # Hermes / Qwen: <tool_call>{"name": ..., "arguments": {...}}</tool_call>
    "function_call": "Action",
}
_FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)(?:```|$)", re.S)
_OPEN_TAG = re.compile(r"<\s*(" + "|".join(map(re.escape, _TAG_LABELS)) + r")\s*>", re.I)
_CLOSE_TAG = re.compile(r"<\s*/\s*(" + "|".join(map(re.escape, _TAG_LABELS)) + r")\s*>", re.I)
# Reasoning models' scratchpad often drafts "Action:" lines that were never meant to run.
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_HEADING = re.compile(
    r"^[ \t]*#{1,6}[ \t]*(?P<label>" + "|".join(s for _, s in _SPELLINGS) + r")[ \t]*[:：]?[ \t]*$", re.I | re.M
)
# Labels run into the previous line ("... latency. Action: query_metrics Action Input: {...}"). Only the
# canonical spellings (case-sensitive) are split out, and Action / Final Answer / Observation only after the
# end of a sentence, so prose such as "the next Action: ..." stays intact.
_INLINE = re.compile(
    r"(?<=\S)[ \t]+(?=Action Input[ \t]*[:：])"
    r"|(?<=[.!?。！？])[ \t]*(?=(?:Action|Final Answer|Observation|行动输入|行动|最终答案|观察)[ \t]*[:：])"
)


@dataclass(frozen=True)
class Segment:
    """One labelled part of a reply: its kind and the text up to the next label."""

    kind: Kind
    text: str
    start: int  # offset of the label in the normalised reply


def normalise_reply(text: str) -> str:
    """Unify line endings, drop <think> drafts, and turn tags, headings and run-in labels into label lines."""
    text = _THINK.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _OPEN_TAG.sub(lambda m: "\n" + _TAG_LABELS[m.group(1).lower()] + ": ", text)
    text = _HEADING.sub(lambda m: m["label"] + ":", _CLOSE_TAG.sub("\n", text))
    return _INLINE.sub("\n", text)


def kind_from_label(label: str) -> Kind:
    """Map a matched label spelling to its kind."""
    for kind, pattern in _KIND_PATTERNS:
        if pattern.fullmatch(label):
            return kind
    raise ValueError(f"not a label: {label!r}")


def segments_from_reply(text: str) -> tuple[str, list[Segment]]:
    """Split a normalised reply into (chatter before the first label, labelled segments in order)."""
    matches = list(_LABEL.finditer(text))
    if not matches:
        return text.strip(), []
    segments = []
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        end = following.start() if following else len(text)
        segments.append(Segment(kind_from_label(match.group("label")), text[match.end() : end].strip(), match.start()))
    return text[: matches[0].start()].strip(), segments


def cut_at_observation(segments: list[Segment]) -> list[Segment]:
    """Drop a made-up Observation and everything after it, once the model has chosen an action or answer.

    An Observation label before any decision is only quoted context and is dropped on its own.
    """
    decided = False
    kept = []
    for segment in segments:
        if segment.kind == "observation":
            if decided:
                break
            continue
        decided = decided or segment.kind in ("action", "final_answer")
        kept.append(segment)
    return kept


def text_from(segments: list[Segment], index: int) -> str:
    """The reply from one segment to the end, labels restored: a final answer may say "Action: roll back"."""
    parts = [segments[index].text]
    parts += [f"{s.kind.replace('_', ' ').title()}: {s.text}" for s in segments[index + 1 :]]
    return "\n".join(p for p in parts if p).strip()


def tidy_answer(text: str) -> str:
    """Drop a lone fence left over from a reply wrapped in ```; keep code blocks inside the answer."""
    lines = text.split("\n")
    fences = [i for i, line in enumerate(lines) if line.strip().startswith("```")]
    if len(fences) % 2 == 1:
        del lines[fences[-1] if fences[-1] == len(lines) - 1 else fences[0]]
    return "\n".join(lines).strip()


def strip_fences(text: str) -> str:
    """The content of a ``` code fence when there is one, else the text without stray fence lines."""
    text = text.strip()
    fenced = _FENCE.search(text)
    if fenced and text[: fenced.start()].strip() == "":
        return fenced.group(1).strip()
    return re.sub(r"^```[\w-]*\s*$", "", text, flags=re.M).strip()
