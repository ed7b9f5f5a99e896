"""The intent gate: only a real investigation pays for the ReAct loop.

Rules run first (cheap, deterministic, English and Chinese). The cheap model is asked only when the rules are
unsure, and when it cannot answer the rules' best guess (or "diagnose") is used, labelled tier "default".
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, cast, get_args

import json_repair

from bot.engine.llm import LLM, LLMUnavailable
from bot.engine.prompts import load_prompt
from bot.engine.types import Intent, Route

log = logging.getLogger(__name__)

_I = re.IGNORECASE

# Each diagnosis signal is a category; two distinct categories make the rules sure.
_DIAGNOSE_SIGNALS: dict[str, re.Pattern[str]] = {
    "asks why": re.compile(r"\bwhy\b|为什么|为啥|怎么回事|咋回事|怎么了", _I),
    "asks for a cause": re.compile(r"root[- ]?cause|\brca\b|\bcaused?\b|根因|原因", _I),
    "asks to investigate": re.compile(
        r"\b(investigate|diagnose|troubleshoot|debug|look into|dig into|figure out)\b|排查|诊断|定位|分析", _I
    ),
    "names a symptom": re.compile(
        r"\b(slow\w*|spik\w*|surg\w*|degrad\w*|outage|down|broken|fail\w*|crash\w*|oom\w*|timeouts?|timing out|"
        r"5\d\d|5xx|errors? (are |is )?(up|rising|increas\w*|high)|went up|jump\w*|regress\w*|hang\w*|stuck|"
        r"broke|restarting|crash ?loop\w*|flapp\w*|leak\w*|unreachable|unavailable|expired)\b|"
        r"飙升|变慢|很慢|慢了|卡顿|故障|异常|报错|超时|挂了|宕机|告警|激增|暴涨|上涨|升高|抖动|失败|不可用|崩溃",
        _I,
    ),
    "anchors a change in time": re.compile(
        r"\bsince\b|\bafter (the )?([\w.-]+ )?(deploy|release|rollout|upgrade|migration)|\bstarted (at|around)\b|"
        r"\d{1,2}[:：]\d{2}\s*(开始|以来|之后|后)|发布后|上线后|从.{0,8}开始",
        _I,
    ),
    "asks what happened": re.compile(
        r"what('?s| is) (wrong|going on|happening)|what (went wrong|happened|changed)|出什么事|出了什么问题|什么问题",
        _I,
    ),
}
_QUESTION_FORM = re.compile(
    r"\b(what('?s| is| are| was)|show( me)?|how (many|much|high|fast)|current(ly)?|now|right now|latest|last|"
    r"tell me|give me)\b|当前|现在|目前|是多少|多少|查一下|看一下|看看|最近一次|最新",
    _I,
)
_MEASURE = re.compile(
    r"\b(p\d{2}|latency|qps|rps|throughput|error[ _]rate|cpu|memory|mem|restarts?|deploy(ment)?s?|version|"
    r"traffic|requests?)\b|延迟|错误率|内存|重启|发布|版本|流量|吞吐|请求量|QPS",
    _I,
)
_HELP = re.compile(
    r"^\s*(help|usage|commands|\?)\s*[?!.？！。]*\s*$|what can you do|how (do|can) i use|"
    r"帮助|怎么用|你能做什么|你会什么|能干什么|使用说明",
    _I,
)
_CHITCHAT = re.compile(
    r"^\s*(hi|hello|hey|yo|morning|good (morning|afternoon|evening|night)|thanks?( you)?( so much| a lot)?|thx|"
    r"ty|cheers|great|nice|cool|ok(ay)?|bye|lol|你好|您好|嗨|哈喽|早上好|早|晚上好|晚安|在吗|在不在|谢谢|多谢|感谢|"
    r"辛苦了|好的|收到|再见)(?![a-z0-9])[\s!！.。,，~😀-🙏]*(opsbot|bot)?[\s!！.。,，~]*$",
    _I,
)
_GREETING_START = re.compile(
    r"^\s*(hi|hello|hey|good (morning|afternoon|evening)|thanks|thank you|你好|您好|谢谢)\b", _I
)
_ROUTES: tuple[str, ...] = get_args(Route)
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+")


def cjk_spaced(text: str) -> str:
    """Runs of CJK characters set apart by spaces: Python's \\b counts them as word characters, so "order的p99"
    would otherwise name neither order nor p99."""
    return _CJK.sub(lambda m: f" {m[0]} ", text)


@dataclass(frozen=True)
class _Rules:
    route: Route
    confidence: float
    reason: str
    has_signal: bool


def classify(text: str, llm: LLM | None = None, *, unsure_below: float = 0.75) -> Intent:
    """Route a question: rules first, the cheap model only when the rules are unsure, else a default."""
    rules = _by_rules(cjk_spaced(text))
    if rules.confidence >= unsure_below:
        return Intent(rules.route, rules.confidence, "rules", rules.reason)
    if llm is not None:
        try:
            return _by_model(text, llm, rules)
        except LLMUnavailable as exc:
            log.warning("intent model unavailable, using the default route: %s", exc)
            why = "model unavailable"
        except Exception as exc:  # the model answered, but not with a route: say that, not "unavailable"
            log.warning("intent model answered without a usable route, using the default route: %s", exc)
            why = f"the model answered, but {exc}"
    else:
        why = "no model configured"
    route: Route = rules.route if rules.has_signal else "diagnose"
    return Intent(route, rules.confidence, "default", f"rules unsure ({rules.reason}); {why}; defaulting to {route}")


def _by_rules(text: str) -> _Rules:
    diagnose = [name for name, pattern in _DIAGNOSE_SIGNALS.items() if pattern.search(text)]
    lookup = bool(_QUESTION_FORM.search(text)) and bool(_MEASURE.search(text))
    if not text.strip():
        return _Rules("help", 0.95, "empty message", False)
    if _HELP.search(text) and not diagnose:
        return _Rules("help", 0.95, "asks what the bot can do", False)
    if _CHITCHAT.match(text) and not diagnose:
        return _Rules("chitchat", 0.95, "greeting or thanks", False)
    if _GREETING_START.match(text) and len(text.split()) <= 5 and not diagnose and not _MEASURE.search(text):
        return _Rules("chitchat", 0.85, "short greeting or thanks", False)
    if len(diagnose) >= 2:
        return _Rules("diagnose", 0.9, " + ".join(diagnose), True)
    if diagnose and lookup:
        return _Rules("diagnose", 0.6, f"{diagnose[0]}, but phrased as a lookup", True)
    if diagnose:
        return _Rules("diagnose", 0.8, diagnose[0], True)
    if lookup:
        return _Rules("lookup", 0.85, "asks for one current value", True)
    if _MEASURE.search(text):
        return _Rules("lookup", 0.55, "names a metric without a question", True)
    return _Rules("diagnose", 0.3, "no rule matched", False)


def _by_model(text: str, llm: LLM, rules: _Rules) -> Intent:
    messages = [{"role": "system", "content": load_prompt("intent")}, {"role": "user", "content": text}]
    reply = llm.complete(messages, role="cheap", max_tokens=80)
    parsed = _reply_to_dict(reply.content)
    route = str(parsed.get("route", "")).strip().lower()
    if route not in _ROUTES:
        raise ValueError(f"with an unknown route {route!r}" if route else "not with a JSON route")
    confidence = min(max(float(parsed.get("confidence", 0.7)), 0.0), 1.0)
    reason = str(parsed.get("reason", "")).strip()[:200] or "no reason given"
    return Intent(cast(Route, route), confidence, "model", f"model: {reason} (rules unsure: {rules.reason})")


def _reply_to_dict(content: str) -> dict[str, Any]:
    start, end = content.find("{"), content.rfind("}")
    candidate = content[start : end + 1] if start >= 0 and end > start else content
    try:
        data = json.loads(candidate)
    except ValueError:
        data = json_repair.loads(candidate)
    if not isinstance(data, dict):
        raise ValueError("not in JSON")
    return data


def intent_to_dict(intent: Intent) -> dict[str, Any]:
    """The JSON line `opsbot classify` prints."""
    return {
        "route": intent.route,
        "confidence": round(intent.confidence, 2),
        "tier": intent.tier,
        "reason": intent.reason,
    }
