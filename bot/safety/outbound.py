"""One boundary for outbound text: every untrusted string leaving for Slack, the API or a terminal passes here last.

Untrusted means anything a user, an alert, a backend or the model wrote (answers, questions, tool arguments,
observations, notes). Nothing between the inbound pass and here redacts (the Router and the engine pass text on as
they got it), so this pass is what keeps a secret the model wrote out of every reader's sight: whatever field it
lands in (text, blocks, stream task titles and outputs, modals, anchors), the text is made visible-only (see
bot.safety.inbound), its secrets are redacted (bot.safety.redact), its Slack specials are neutralised and its
length is capped:
- broadcasts (`<!channel>`, `@here`), user-group and user mentions (`<!subteam^…>`, `<@U…>`) become inert text
  (a word joiner after the @), so opsbot can never ping anyone on a model's or a user's behalf;
- links are shown as plain text with their real target (`label (https://…)`), so a label cannot hide where a
  link goes, in mrkdwn (`<url|label>`) and in standard markdown (`[label](url)`) alike;
- `&`, `<` and `>` are escaped as Slack asks (in markdown blocks `<`, which CommonMark shows as itself), so no
  `<script>` or `<img>` survives as markup.
The API's JSON gets the same neutralising (its answers end up in other chat tools) and is strict JSON: no NaN or
Infinity, no lone surrogate (`json_bytes`). Plain text (a terminal, the thread memory kept for a follow-up) is made
visible-only and redacted (`plain_text`). The trace stores redact what they keep themselves (bot/store/).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from bot.safety.inbound import cap_chars, visible_text
from bot.safety.redact import redact

# A word joiner after "@" keeps the word readable while no client or API parses it as a mention.
JOINER = "\u2060"
MAX_OUTBOUND_CHARS = 40_000  # Slack truncates a message's text there; callers cap each field far lower
ANCHOR_QUOTE_CHARS = 200  # what an anchor (the /diagnose or alert post in the channel) quotes of the input
_BROADCAST = re.compile(r"<!(channel|here|everyone)(?:\|[^>]*)?>", re.IGNORECASE)
_SUBTEAM = re.compile(r"<!subteam\^[^>|]*(?:\|@?([^>]*))?>", re.IGNORECASE)
_OTHER_SPECIAL = re.compile(r"<!([^>|]*)(?:\|([^>]*))?>")
_USER = re.compile(r"<@([^>|]*)(?:\|@?([^>]*))?>")
_CHANNEL = re.compile(r"<#([^>|]*)(?:\|([^>]*))?>")
_LINK = re.compile(r"<([a-z][a-z0-9+.-]*:[^>|\s]*)(?:\|([^>]*))?>", re.IGNORECASE)
_MARKDOWN_LINK = re.compile(r"!?\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_DANGLING = re.compile(r"<([@!#]|[a-z][a-z0-9+.-]*:)", re.IGNORECASE)
_PLAIN_MENTION = re.compile(r"@(channel|here|everyone)\b", re.IGNORECASE)


def neutralise_mentions(text: str) -> str:
    """Broadcasts, group and user mentions, channel links and links made inert plain text."""
    text = _BROADCAST.sub(lambda m: f"@{JOINER}{m.group(1).lower()}", text)
    text = _SUBTEAM.sub(lambda m: f"@{JOINER}{m.group(1) or 'group'}", text)
    text = _OTHER_SPECIAL.sub(lambda m: m.group(2) or m.group(1), text)
    text = _USER.sub(lambda m: f"@{JOINER}{m.group(2) or m.group(1)}", text)
    text = _CHANNEL.sub(lambda m: f"#{m.group(2) or m.group(1)}", text)
    text = _LINK.sub(_plain_link, text)
    text = _DANGLING.sub(lambda m: f"<{JOINER}{m.group(1)}", text)  # a token cut short by a length cap
    return _PLAIN_MENTION.sub(lambda m: f"@{JOINER}{m.group(1)}", text)


def slack_mrkdwn(text: str, max_chars: int = MAX_OUTBOUND_CHARS) -> str:
    """Untrusted text for a mrkdwn or plain field (text, sections, context, task cards): inert, escaped, capped."""
    return cap_chars(_escape(neutralise_mentions(redact(visible_text(str(text))))), max_chars)


def slack_markdown(text: str, max_chars: int = MAX_OUTBOUND_CHARS) -> str:
    """Untrusted text for a standard-markdown block: inert mentions, links as `label (url)`, escaped, capped."""
    text = _MARKDOWN_LINK.sub(_plain_markdown_link, neutralise_mentions(redact(visible_text(str(text)))))
    # no tag, Slack token or autolink can start without "<"; CommonMark shows the entity as the character itself,
    # so `50 -> 200` and `a & b` read as written
    return cap_chars(text.replace("<", "&lt;"), max_chars)


def anchor_quote(text: str, max_chars: int = ANCHOR_QUOTE_CHARS) -> str:
    """A short, escaped quote of user or alert text for a channel post; long input is never echoed whole."""
    return slack_mrkdwn(" ".join(visible_text(str(text)).split()), max_chars)


def plain_text(text: str) -> str:
    """Untrusted text leaving as plain text (a terminal, a kept thread turn): visible-only, secrets redacted."""
    return redact(visible_text(str(text)))


def plain_value(value: Any) -> Any:
    """`plain_text` of every string inside a JSON-like value (a trace printed as JSON); other values unchanged."""
    if isinstance(value, str):
        return plain_text(value) if value else value
    if isinstance(value, Mapping):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_value(v) for v in value]
    return value


def api_value(value: Any) -> Any:
    """A JSON-ready value for API consumers: strings visible-only with inert mentions, non-finite numbers null."""
    if isinstance(value, str):
        return neutralise_mentions(redact(visible_text(value))) if value else value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(api_value(k)): api_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [api_value(v) for v in value]
    return value


def json_bytes(body: Any) -> bytes:
    """Strict JSON (no NaN/Infinity, valid UTF-8) of an API body, after `api_value`."""
    return json.dumps(api_value(body), ensure_ascii=False, allow_nan=False).encode("utf-8", "replace")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plain_link(match: re.Match[str]) -> str:
    url, label = match.group(1), (match.group(2) or "").strip()
    return f"{label} ({url})" if label and label != url else url


def _plain_markdown_link(match: re.Match[str]) -> str:
    label, url = match.group(1).strip(), match.group(2)
    return f"{label} ({url})" if label and label != url else url or label
