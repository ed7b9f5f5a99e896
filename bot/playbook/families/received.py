"""A client status one service receives from another, found when the asked service looks healthy: a 401 from a
provider that no longer takes a key, a 404 from a callee whose deploy removed a route, a 429 from a limiter.

The error rate counts 5xx, so a caller refused with a 4xx (it drops the option, ends the session) looks healthy, and so
does the callee that answers it. Their lines say it, at WARN as often as at ERROR: every service's lines naming a
client status over the window, new since the window began (not there all along), show who receives it; the callee the
lines name (in the text or a field) is who answers it. The whole lines' own fields carry what identifies the refusal
(the key, the path, the host), and the answering callee's deploy just before the first such line is what changed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

import tools.analysis.ranking as ranking
from bot.playbook.evidence import deploys_in
from bot.playbook.families.hypotheses import StatusAnswered
from bot.playbook.findings import Findings
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.logs.model import LogEntry
from tools.logs.summary import Signature
from tools.results import diff_of, logs_of, signatures_of

CODES = ("401", "403", "404", "429")
_CODE_RX = re.compile(r"(?<![\w.])(401|403|404|429)(?![\w])")
NEW_AFTER = timedelta(minutes=30)  # a signature first seen this long after the window began is new in it
# Fields that identify a refusal (a key, an account, a host, a path, what the far side said), not one request.
_TELLING_KEY = re.compile(
    r"key|token|account|host|upstream|path|route|endpoint|error|detail|body|reason", re.IGNORECASE
)
MAX_FIELD_CHARS = 160


@dataclass(frozen=True)
class StatusReceived(StatusAnswered):
    """A status `receiver` gets from `service` (the callee its lines name), with what the whole lines identify."""

    receiver: str = ""
    detail: str = ""  # the telling fields of one whole line: `api_key_id=…, upstream_host=…`

    def describe(self) -> str:
        got = (
            f"{self.receiver} receives {self.code} from {self.service} since {self.since:%H:%M} UTC, which no error "
            f'rate (5xx) counts: {self.count:,} lines like "{self.line}"'
        )
        got += f" ({self.detail})" if self.detail else ""
        if self.deploy is None:
            return f"{got}; no deploy caused this: nothing of {self.service} was deployed just before it"
        what = "; ".join(f"{c.key} {c.old} → {c.new}" for c in self.changes[:3])
        changed = f", which changed {what}" if what else ""
        return f"deploy {self.service} {self.deploy.version} at {self.deploy.at:%Y-%m-%d %H:%M} UTC{changed}: {got}"


def check_status_received(run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]]) -> None:
    """Every service's lines naming a client status over the window: the new ones, who receives, who answers."""
    if "query_logs" not in run.tools:
        return
    thought = (
        f"The asked service looks healthy; a refusal its neighbours receive (401, 403, 404, 429) is counted by no "
        f"error rate: reading every service's lines that name one over {run.window.label}."
    )
    args = {"service": "*", "query": " OR ".join(CODES), "range": run.window.range_arg, "limit": 200}
    step = run.probe(thought, "query_logs", args)
    if step is None or (summary := logs_of(step)) is None:
        return
    found = [*signatures_of(step, "ERROR"), *signatures_of(step, "WARN")]
    # not there all along: first seen well after the window began
    new = [s for s in found if s.first_at - summary.window.start > NEW_AFTER and _code_of(s)]
    if not new:
        return
    counts = Counter({s.example.service: 0 for s in new})
    for sig in new:
        counts[sig.example.service] += sig.count
    receiver = _receiver(counts, topology)
    top = max((s for s in new if s.example.service == receiver), key=lambda s: s.count)
    callee = _callee_named(top, topology.get(receiver, ())) or receiver
    code = _code_of(top)
    detail = _detail(run, receiver, code)
    status = StatusReceived(
        code, callee, top.first_at, top.example.message, top.count, receiver=receiver, detail=detail
    )
    findings.status = _with_callee_deploy(run, status)


def _code_of(sig: Signature) -> str:
    text = " ".join([sig.template, sig.example.message, *(v for _, v in sig.example.fields)])
    match = _CODE_RX.search(text)
    return match.group(1) if match else ""


def _receiver(counts: Counter[str], topology: Mapping[str, Sequence[str]]) -> str:
    """The service that receives the status: of those logging it, a caller of another one logging it (that one
    answers), else the one logging most."""
    logging = set(counts)
    callers = [s for s in logging if logging & set(topology.get(s, ())) - {s}]
    return max(callers or logging, key=lambda s: counts[s])


def _callee_named(sig: Signature, callees: Sequence[str]) -> str:
    """The callee a line names, in its text or a field ("rejected by playback-api", "ParcelNet rate request")."""
    text = " ".join([sig.example.message, *(v for _, v in sig.example.fields)]).casefold()
    for callee in callees:
        words = [w for w in re.split(r"[-_.]", callee.casefold()) if len(w) > 3 and w not in ("service", "api")]
        if callee.casefold() in text or any(re.search(rf"\b{re.escape(w)}\b", text) for w in words):
            return callee
    return ""


def _detail(run: ProbeRun, receiver: str, code: str) -> str:
    """The telling fields of the newest whole line of `receiver` that names the status."""
    why = f"Reading {receiver}'s newest whole line naming {code}: its fields say which key, host or path is refused."
    args = {"service": receiver, "query": code, "range": run.window.range_arg, "limit": 20, "full": 1}
    summary = run.read_logs(why, args)
    entries: Sequence[LogEntry] = summary.whole_lines if summary is not None else ()
    if not entries:
        return ""
    telling = [
        f"{key}={value}"
        for key, value in entries[0].fields
        if _TELLING_KEY.search(key) and value and len(value) <= MAX_FIELD_CHARS
    ]
    return ", ".join(telling[:5])


def _with_callee_deploy(run: ProbeRun, status: StatusReceived) -> StatusReceived:
    """The answering callee's deploy in the minutes before the status began, with what its diff changed."""
    if "query_deploy_records" not in run.tools or status.service == status.receiver:
        return status
    start = status.since - ranking.STEP_LOOKBACK
    thought = (
        f"{status.service} answers {status.receiver} with {status.code} since {status.since:%H:%M} UTC: was "
        f"{status.service} deployed in the {ranking.lookback_words(ranking.STEP_LOOKBACK)} before?"
    )
    args = {"service": status.service, "start": iso_from_moment(start), "end": iso_from_moment(status.since)}
    step = run.probe(thought, "query_deploy_records", args)
    records = deploys_in(step, status.service) if step is not None else []
    if not records:
        return status
    record = records[-1]
    why = (
        f"Reading the diff of {status.service} {record.version}: what did it change that callers now get {status.code}?"
    )
    diff = run.probe(why, "query_deploy_diff", {"version": record.version, "service": status.service})
    report = diff_of(diff) if diff is not None else None
    changes = [c for c in (report.key_changes if report else ()) if not c.key.endswith("newTag")]
    return replace(status, deploy=record, changes=tuple(changes))
