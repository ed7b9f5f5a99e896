"""Message text -> hashed sparse features for the intent classifier. Pure Python: training and serving share it.

Text is first made plain the way Slack delivers it: user and channel mentions, links, code blocks and HTML
escapes (&amp; &lt; &gt;) become plain words, in line with bot/slack/intake/events.py's cleaning (which has already
stripped the bot's own mention and neutralised broadcasts); from the fourth lexicon edition, a long inline code span
(a pasted log line) becomes the word "code" too. Features are character n-grams (1-4, which also
read Chinese without a word segmenter) and word unigrams and bigrams, hashed with CRC-32 (stable across
processes, unlike `hash()`) into a fixed number of buckets, binary and L2-normalised; plus the domain cues of
bot/routing/cues.py, and their pairs, as features of their own. Traditional Chinese is read as Simplified
(bot/routing/hanzi.py), so the mostly Simplified corpus and cues carry over to a team writing Traditional.
"""

from __future__ import annotations

import functools
import html
import itertools
import math
import re
import unicodedata
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from bot.routing.cues import LEXICON, cues_in
from bot.routing.hanzi import simplified_from_traditional
from bot.routing.lexicon import ASKED_CUES

Features = dict[int, float]

_USER_MENTION = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")
_CHANNEL = re.compile(r"<#C[A-Z0-9]+(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!([^>|]*)(?:\|([^>]*))?>")
_LINK = re.compile(r"<((?:https?|mailto):[^>|]*)(?:\|([^>]*))?>")
_BARE_URL = re.compile(r"https?://\S+")
_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
# a pasted log or error line in inline code: its words are the system's, not the writer's ("explain this line: `...`")
_LONG_INLINE_CODE = re.compile(r"`[^`\n]{25,}`")
_QUOTE_MARK = re.compile(r"^\s*>\s?", re.MULTILINE)
_JOINER = "\u2060"
_WORD = re.compile(r"[a-z][a-z0-9_.'-]*[a-z0-9]|[a-z]|\d+[a-z%]*")
_SPACES = re.compile(r"\s+")
# Who a message is addressed to ("@opsbot", "opsbot,") says nothing about what it asks, and hides a first word
_ADDRESS = re.compile(r"^(?:(?:@[\w.-]+|opsbot|bot)\b[\s,:]*)+")
# Digits say little about the intent ("15:05" vs "14:20"), but their shape does: runs keep their length class.
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class FeatureSpec:
    """How text becomes features; the artifact records it, so serving always matches training."""

    buckets: int = 1 << 20
    char_min: int = 1
    char_max: int = 4
    word_bigrams: bool = True
    cue_weight: float = 0.1  # the value of a cue feature (n-gram features share a total L2 norm of 1)
    simplified: bool = True  # Traditional Chinese characters read as Simplified (an older artifact: False)
    # the lexicon's edition (bot/routing/cues.py compiled_cues): 0 before it (an older artifact), 1 the other
    # languages' cues, the request cues and no address, 2 the wider request words and the stated cues, 3 venting,
    # laughter and status notes, 4 an alert taken, a disk written, other alerting tools' pages, a log line in code,
    # 5 the bot stopped, a value asked for a text, a text's style, a declined text or value (a negation's scope),
    # 6 a symptom since a change, panic, an escalation, a relayed report, Portuguese and German question forms
    lexicon: int = LEXICON
    ask_weight: float = 0.4  # the value of a request cue (bot/routing/lexicon.py ASKED, a pasted alert) and its pairs

    def to_dict(self) -> dict[str, int | bool | float]:
        return {
            "buckets": self.buckets,
            "char_min": self.char_min,
            "char_max": self.char_max,
            "word_bigrams": self.word_bigrams,
            "cue_weight": self.cue_weight,
            "simplified": self.simplified,
            "lexicon": self.lexicon,
            "ask_weight": self.ask_weight,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> FeatureSpec:
        return cls(
            buckets=int(str(data["buckets"])),
            char_min=int(str(data["char_min"])),
            char_max=int(str(data["char_max"])),
            word_bigrams=bool(data["word_bigrams"]),
            cue_weight=float(str(data.get("cue_weight", 0.0))),
            simplified=bool(data.get("simplified", False)),
            lexicon=_edition(data.get("lexicon", 0)),
            ask_weight=float(str(data.get("ask_weight", 0.0))),
        )


def _edition(value: object) -> int:
    """A lexicon edition: a number, or an older artifact's flag (true: the first edition)."""
    return int(value) if isinstance(value, (bool, int)) else 0


def plain_from_slack(text: str) -> str:
    """Slack markup -> the words a person reads: mentions dropped, links as their label, code as `code`."""
    text = _CODE_BLOCK.sub(" code ", text)
    text = _USER_MENTION.sub(" ", text)
    text = _CHANNEL.sub(lambda m: f" {m.group(1) or 'channel'} ", text)
    text = _LINK.sub(lambda m: f" {m.group(2) or 'link'} ", text)
    text = _SPECIAL.sub(" ", text)  # <!here>, <!channel>, <!subteam^...>: who is pinged is no intent
    text = _BARE_URL.sub(" link ", text)
    text = html.unescape(text).replace(_JOINER, "")
    text = _QUOTE_MARK.sub("", text)
    return _SPACES.sub(" ", text).strip()


def normalised(text: str, simplified: bool = True, lexicon: int = LEXICON) -> str:
    """Plain, NFKC-folded (full-width punctuation -> ASCII), lower-case text with digit runs made generic and, if
    `simplified`, Traditional Chinese characters as Simplified ones; with `lexicon`, without a leading address."""
    text = unicodedata.normalize("NFKC", plain_from_slack(text)).lower()
    if lexicon:
        text = _ADDRESS.sub("", text)
    if lexicon >= 4:
        text = _LONG_INLINE_CODE.sub("code", text)
    if simplified:
        text = simplified_from_traditional(text)
    return _DIGITS.sub(lambda m: "0" * min(len(m[0]), 3), text)


def features_from_text(text: str, spec: FeatureSpec = FeatureSpec()) -> Features:
    """Binary hashed n-gram features, L2-normalised (an empty text has none)."""
    norm = normalised(text, spec.simplified, spec.lexicon)
    if not norm:
        return {}
    names = _char_grams(norm, spec.char_min, spec.char_max)
    words = _WORD.findall(norm)
    names.update(f"w:{word}" for word in words)
    if spec.word_bigrams:
        names.update(f"b:{a} {b}" for a, b in itertools.pairwise(words))
    indices = {zlib.crc32(name.encode("utf-8", "surrogatepass")) % spec.buckets for name in names}
    features = dict.fromkeys(indices, 1.0 / math.sqrt(len(indices)))
    if spec.cue_weight:
        for name in cue_names(text, spec.simplified, spec.lexicon):
            bucket = zlib.crc32(f"q:{name}".encode()) % spec.buckets
            weight = spec.ask_weight if any(part in ASKED_CUES for part in name.split("+")) else spec.cue_weight
            features[bucket] = features.get(bucket, 0.0) + weight
    return features


# a pasted alert, read in the raw text (a code block becomes the word "code" in the features' text)
_ALERT = re.compile(r"\[(firing|warning|critical|alert)[^\]]*\]|\bfiring:|\balertname\b|【告警】|告警[:：]", re.I)
_RESOLVED_ALERT = re.compile(r"\[resolved[^\]]*\]|\bresolved:", re.I)
# from the fourth edition, the other alerting tools' pages ("[PagerDuty] TRIGGERED", "[Zabbix] PROBLEM:", "Urgency:")
_PAGED = re.compile(
    r"\btriggered\b|\bproblem:|\[(pagerduty|opsgenie|zabbix|nagios|datadog)\]|\b(severity|urgency):", re.I
)


def alert_cues(raw: str, lexicon: int = LEXICON) -> list[str]:
    """ "alert" for a pasted alert that is firing, "alert_resolved" for one that has resolved (both may be)."""
    found = ["alert"] if _ALERT.search(raw) or (lexicon >= 4 and _PAGED.search(raw)) else []
    return found + (["alert_resolved"] if _RESOLVED_ALERT.search(raw) else [])


@functools.lru_cache(maxsize=64)
def cue_names(text: str, simplified: bool = True, lexicon: int = LEXICON) -> tuple[str, ...]:
    """The cues of a message and their pairs (bot/routing/cues.py), a pasted alert's read in the raw text. Cached: the
    gate reads them twice, for the features and for the request (a third of a message's cost)."""
    found = alert_cues(text, lexicon) if lexicon else []
    return tuple(cues_in(normalised(text, simplified, lexicon), found, lexicon=lexicon))


def _char_grams(norm: str, low: int, high: int) -> set[str]:
    padded = f" {norm} "
    return {f"c:{padded[i : i + n]}" for n in range(low, high + 1) for i in range(len(padded) - n + 1)}
