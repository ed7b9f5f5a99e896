"""One boundary for untrusted text: every string that enters from a user or an alert passes here first, once.

Slack events (mentions, /diagnose, DMs, shortcuts, thread context), the HTTP API, the Alertmanager webhook and
the CLI all call `clean_inbound` before anything else sees the text; nothing after them repeats it (the Router
takes a question as cleaned). It removes what no reader can use and some readers choke on: invalid code points (a
lone surrogate makes the OpenAI client, SQLite and the WSGI encoder raise), control characters (NUL, ESC, BEL),
invisible format and bidi characters (U+200B, U+2060, RLO, BOM), floods of combining marks (zalgo text); it strips
the bot's own mention and caps the length. Last, it redacts secrets (bot/safety/redact.py): the first place a
question goes is the model, so a key a user pasted is gone before the model, a store or a channel sees it.
Text that is left with no letter or digit is no request at all (`has_request_text`): surfaces answer it with usage,
never the LLM.
"""

from __future__ import annotations

import re
import unicodedata

MAX_INBOUND_CHARS = 4_000
MAX_COMBINING_RUN = 3  # Vietnamese stacks two marks, Thai a vowel and a tone: three keeps every real script
_LINE_BREAKS = frozenset("\n\r\u2028\u2029\x85\x0b\x0c")
_SPACES = re.compile(r"[ \t]+")
_SLACK_MENTION = re.compile(r"<[@!#][^>]*>")  # a mention alone (of anyone, even a broadcast) asks nothing


def clean_inbound(text: str, *, bot_user_id: str = "", max_chars: int = MAX_INBOUND_CHARS) -> str:
    """Untrusted text made safe to read, store, send to a model and quote: see the module docstring."""
    text = str(text or "")[: max_chars * 4]  # bound the work before the per-character pass
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
    text = visible_text(text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    # redacted before the cap, so a key cut short by it cannot slip past its shape
    return cap_chars(_redacted("\n".join(line for line in lines if line)), max_chars)


def _redacted(text: str) -> str:
    # the rules compile on the first question, so a command that reads no user text (`opsbot classify`) skips them
    from bot.safety.redact import redact

    return redact(text)


def visible_text(text: str) -> str:
    """Only characters a reader can see: invalid, control, format and bidi characters removed, mark runs capped.

    Line and paragraph separators become newlines and every other space becomes a plain space, so nothing
    invisible can hide a word from the intent gate or reorder what a reader sees.
    """
    out: list[str] = []
    marks = 0
    for char in text:
        category = unicodedata.category(char)
        if category in ("Mn", "Me"):
            marks += 1
            if marks <= MAX_COMBINING_RUN:
                out.append(char)
            continue
        marks = 0
        if char in _LINE_BREAKS:
            out.append("\n")
        elif char == "\t" or category == "Zs":
            out.append(" ")
        elif category[0] != "C":  # Cc control, Cf format/bidi, Cs surrogate, Co private use, Cn unassigned
            out.append(char)
    return "".join(out).replace("\n\n\n", "\n\n")


def cap_chars(text: str, max_chars: int, marker: str = "…") -> str:
    """At most `max_chars` characters, ending with the marker when cut."""
    if len(text) <= max_chars:
        return text
    return text[: max(max_chars - len(marker), 0)].rstrip() + marker


def has_request_text(text: str) -> bool:
    """True when the text asks something: at least one letter or digit once mentions and invisibles are gone."""
    return any(char.isalnum() for char in _SLACK_MENTION.sub(" ", visible_text(text)))
