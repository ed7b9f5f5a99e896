"""Secret redaction for everything opsbot shows or stores: observations, answers, Slack posts, logs, traces.

Secrets become `[REDACTED:<kind>]` while the text around them stays readable: a connection string keeps
its user and host, a header keeps its name, a JSON field keeps its key and quotes. Specific token shapes
run first (they name the kind precisely), the generic `password=` / `"token": "..."` rule runs last and
leaves values that are already redacted, placeholders (`${DB_PASSWORD}`) and yes/no flags alone.
Ordinary hex ids (trace ids, git SHAs) match no rule on purpose: they are evidence, not secrets.
Word boundaries are ASCII-only (re.ASCII), so a key glued to Chinese text (密钥AKIA...) is still found.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.engine.types import Step, Trace

_B64 = r"A-Za-z0-9+/"
_URLSAFE = r"A-Za-z0-9_-"


@dataclass(frozen=True)
class _Rule:
    """A secret shape. The optional `keep` group is context kept in front of the marker.

    `anchors` are literal pieces every match contains (one of them at least; lower-case, and looked for in the
    lower-cased text, when the shape ignores case): a text holding none of them cannot match, so the scan is
    skipped. Most text holds none: an observation is searched for a few substrings instead of ~25 patterns.
    """

    kind: str
    pattern: re.Pattern[str]
    anchors: tuple[str, ...]

    def applies(self, text: str, lower: str) -> bool:
        within = lower if self.pattern.flags & re.IGNORECASE else text
        return any(anchor in within for anchor in self.anchors)


def _rule(kind: str, anchors: tuple[str, ...], pattern: str, flags: int = 0) -> _Rule:
    return _Rule(kind, re.compile(pattern, flags | re.ASCII), anchors)


# Order matters: whole blocks and URLs first, then precise token shapes, then header forms.
_RULES: tuple[_Rule, ...] = (
    # a PEM block, also JSON-escaped (GCP service-account files) and cut off by a truncated observation
    _rule(
        "private_key",
        ("-----BEGIN",),
        r"-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z ]*PRIVATE KEY(?: BLOCK)?-----(?:\\n)?|\Z)",
    ),
    # scheme://user:password@host -> keep scheme, user and host; redis://:password@ has an empty user. The
    # password runs to the last @ of the authority, so an unencoded "p@ss" does not leak its tail.
    _rule(
        "password", ("://",), r"(?P<keep>\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^:/\s@\"']*:)(?!\[REDACTED)[^\s/\"']+(?=@)"
    ),
    _rule(
        "slack_webhook",
        ("hooks.slack.com",),
        r"(?P<keep>https://hooks\.slack\.com/)(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
    ),
    _rule("jwt", ("eyJ",), rf"\beyJ[{_URLSAFE}]{{8,}}\.[{_URLSAFE}]{{8,}}\.[{_URLSAFE}]{{8,}}"),
    _rule("aws_access_key_id", ("AKIA", "ASIA"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    _rule(
        "aws_secret_key",
        ("aws",),
        rf"(?P<keep>aws_?secret_?(?:access_?)?key[\"']?[ \t]*[:=][ \t]*[\"']?)[{_B64}]{{40}}(?![{_B64}])",
        re.I,
    ),
    _rule("github_token", ("gh",), r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b|\bgithub_pat_[A-Za-z0-9_]{22,255}"),
    _rule("gitlab_token", ("glpat-",), r"\bglpat-[A-Za-z0-9_-]{20,}"),
    _rule("slack_token", ("xox", "xapp-"), r"\bxox[abposr]-[0-9A-Za-z-]{10,}|\bxapp-\d-[0-9A-Za-z-]{10,}"),
    _rule("anthropic_key", ("sk-ant-",), rf"(?<![\w-])sk-ant-[{_URLSAFE}]{{20,}}"),
    _rule("openai_key", ("sk-",), rf"(?<![\w-])sk-(?:proj-|svcacct-|admin-)?[{_URLSAFE}]{{32,}}"),
    _rule(
        "stripe_key", ("sk_", "rk_", "whsec_"), r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|\bwhsec_[A-Za-z0-9]{24,}"
    ),
    _rule("google_api_key", ("AIza",), rf"\bAIza[{_URLSAFE}]{{35}}"),
    _rule("npm_token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    _rule("sendgrid_key", ("SG.",), rf"\bSG\.[{_URLSAFE}]{{22}}\.[{_URLSAFE}]{{43}}"),
    _rule("huggingface_token", ("hf_",), r"\bhf_[A-Za-z]{34}\b"),
    _rule("azure_storage_key", ("accountkey=",), rf"(?P<keep>\bAccountKey=)[{_B64}]{{20,}}={{0,2}}", re.I),
    _rule("azure_sas", ("sig=",), r"(?P<keep>[?&;]sig=)[A-Za-z0-9%+/]{20,}={0,2}"),
    _rule("twilio_key", ("SK",), r"\bSK[0-9a-fA-F]{32}\b"),
    _rule("mailgun_key", ("key-",), r"\bkey-[0-9a-zA-Z]{32}\b"),
    # a bare 32-64 hex value assigned to a key-like name (`key=`, `x-auth:`, `sig=`); `trace_id=` and `commit=`
    # carry hex too, but no key word, so trace ids and git SHAs stay readable evidence
    _rule(
        "api_key",
        ("key", "secret", "token", "auth", "sig", "pass"),
        r"(?P<keep>\b[\w.-]*(?:key|secret|token|auth|sig|signature|pass)[\"']?[ \t]*[:=][ \t]*[\"']?)"
        r"[0-9a-fA-F]{32,64}\b",
        re.I,
    ),
    _rule("bearer_token", ("bearer",), r"(?P<keep>\bBearer\s+)(?!\[REDACTED)[A-Za-z0-9._~+/-]{8,}=*", re.I),
    _rule(
        "basic_auth",
        ("authorization",),
        rf"(?P<keep>\bAuthorization[\"']?[ \t]*[:=][ \t]*[\"']?Basic\s+)[{_B64}]{{4,}}={{0,2}}",
        re.I,
    ),
)

_KEY_KINDS: tuple[tuple[str, str], ...] = (
    ("password", r"password|passwd|pwd"),
    ("private_key", r"private[_-]?key"),
    ("api_key", r"api[_-]?key|apikey|auth[_-]?key"),
    ("access_key", r"access[_-]?key"),
    ("secret", r"secret|(?:secret|signing|encryption|master)[_-]?key|passphrase"),
    ("token", r"token"),
    ("credentials", r"credentials?"),
)
# key = value, key: value, "key": "value"; the key ends with a secret word (so max_tokens is left alone).
# Only the secret word is matched: whatever precedes it (DB_, client_, X-Api-) stays in place untouched,
# and the search never backtracks over long words.
_ASSIGNMENT = re.compile(
    r"(?P<key>" + "|".join(s for _, s in _KEY_KINDS) + r")"
    r"(?P<sep>[\"']?[ \t]*[:=][ \t]*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;&}\])]+)",
    re.I | re.ASCII,
)
_ASSIGNMENT_ANCHORS = ("pass", "pwd", "key", "secret", "token", "credential")  # in every key word above
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_KEEP_VALUES = frozenset({"", "null", "none", "nil", "true", "false", "yes", "no", "required", "[]", "{}"})


def redact(text: str) -> str:
    """Replace every secret shape in text with [REDACTED:<kind>]; everything else is left as it was."""
    if not text:
        return text
    if not text.isascii():  # everything redacted is stored or sent: it must encode
        text = _LONE_SURROGATE.sub("\ufffd", text)
    lower = text.lower()
    for rule in _RULES:
        if rule.applies(text, lower):
            text, found = rule.pattern.subn(functools.partial(_marker, kind=rule.kind), text)
            lower = text.lower() if found else lower
    if not any(anchor in lower for anchor in _ASSIGNMENT_ANCHORS):
        return text
    return _ASSIGNMENT.sub(_redact_assignment, text)


def redact_value(value: Any) -> Any:
    """Redact strings inside tool arguments (nested dicts and lists too); other values pass through."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    return value


def redact_trace(trace: Trace) -> Trace:
    """The trace with question, thoughts, args, observations, answer, notes and confirmation redacted."""
    return dataclasses.replace(
        trace,
        question=redact(trace.question),
        steps=tuple(_redact_step(s) for s in trace.steps),
        answer=redact(trace.answer),
        notes=tuple(redact(n) for n in trace.notes),
        confirmed_by=redact(trace.confirmed_by),
    )


def _redact_step(step: Step) -> Step:
    return dataclasses.replace(
        step,
        thought=redact(step.thought),
        args=redact_value(dict(step.args)),
        observation=redact(step.observation),
    )


def _marker(match: re.Match[str], kind: str) -> str:
    keep = match.groupdict().get("keep") or ""
    return f"{keep}[REDACTED:{kind}]"


def _redact_assignment(match: re.Match[str]) -> str:
    value = match["value"]
    quote = value[0] if value[:1] in ("'", '"') else ""
    bare = value[1:-1] if quote else value
    if _is_not_a_secret(bare):
        return match[0]
    return f"{match['key']}{match['sep']}{quote}[REDACTED:{_kind_of_key(match['key'])}]{quote}"


def _is_not_a_secret(value: str) -> bool:
    """Already redacted, a template reference, a mask, or a flag such as MySQL's `using password: YES`."""
    stripped = value.strip()
    return (
        stripped.lower() in _KEEP_VALUES
        or stripped.startswith(("[REDACTED", "${", "{{", "<", "%("))
        or set(stripped) <= {"*", "x", "X", "."}
    )


def _kind_of_key(key: str) -> str:
    for kind, spelling in _KEY_KINDS:
        if re.search(rf"(?:{spelling})$", key, re.I):
            return kind
    return "secret"
