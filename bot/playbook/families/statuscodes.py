"""A client status the error rate does not count: 429s, 401s, 403s the user names, read from the logs.

The error rate counts 5xx; a service that throttles (429) or refuses (401, 403) its callers looks healthy in it. When
the question names such a status and the asked service is flat, every service's lines naming it over the window show
who answers it, and since when (a signature that was there all along is background). That service's deploys of the day
before, read for a change to what decides that status (a rate limit for a 429), are the hypothesis: such a setting
bites when load meets it, hours after it landed.
"""

from __future__ import annotations

import re
from datetime import timedelta

import tools.analysis.changeclass as changeclass
import tools.analysis.ranking as ranking
from bot.playbook.evidence import deploys_in
from bot.playbook.families.hypotheses import StatusAnswered
from bot.playbook.findings import Findings
from bot.playbook.probes import ProbeRun, iso_from_moment
from tools.logs.summary import Signature
from tools.results import diff_of, signatures_of

_STATUS_RX = re.compile(r"(?<![\w.])(401|403|429)(?!\d)")  # "429s" too
NEW_AFTER = timedelta(minutes=30)  # a signature first seen this long after the window began is new in it
MAX_DIFFS = 3
# What decides each status: the classes of setting whose change can make a service answer it.
_DECIDES = {"429": (changeclass.RATE_LIMIT,), "401": (), "403": ()}


def check_status_answered(run: ProbeRun, findings: Findings, question: str) -> None:
    """The question names a 429/401/403: which service answers it since when, and what its deploys changed."""
    named = _STATUS_RX.search(question)
    if named is None or "query_logs" not in run.tools:
        return
    code = named.group(1)
    thought = (
        f"The question names {code}s, which the error rate (5xx) does not count; reading every service's lines "
        f"that name {code} over {run.window.label}: who answers it, and since when."
    )
    args = {"service": "*", "query": code, "range": run.window.range_arg, "limit": 200}
    step = run.probe(thought, "query_logs", args)
    found = [*signatures_of(step, "ERROR"), *signatures_of(step, "WARN")] if step is not None else []
    start = min((s.first_at for s in found), default=None)
    new = [s for s in found if code in s.template and start is not None and s.first_at - start > NEW_AFTER]
    if not new:
        return
    service = max(
        {s.example.service for s in new}, key=lambda svc: sum(s.count for s in new if s.example.service == svc)
    )
    own = sorted((s for s in new if s.example.service == service), key=lambda s: -s.count)
    findings.status = StatusAnswered(code, service, own[0].first_at, own[0].example.message, own[0].count)
    _status_change(run, findings, own[0], code)


def _status_change(run: ProbeRun, findings: Findings, first: Signature, code: str) -> None:
    """The answering service's deploys of the day before the status began, for a change to what decides it."""
    status = findings.status
    if status is None or "query_deploy_records" not in run.tools:
        return
    start = first.first_at - ranking.DELAYED_LOOKBACK
    thought = (
        f"{status.service} answers {code} since {first.first_at:%H:%M} UTC; a change to what decides it can bite "
        f"hours after it lands: reading {status.service}'s deploys of the "
        f"{ranking.lookback_words(ranking.DELAYED_LOOKBACK)} before."
    )
    args = {"service": status.service, "start": iso_from_moment(start), "end": iso_from_moment(first.first_at)}
    step = run.probe(thought, "query_deploy_records", args)
    records = sorted(deploys_in(step, status.service), key=lambda d: -d.at.timestamp()) if step is not None else []
    for record in records[:MAX_DIFFS]:
        why = f"Reading the diff of {status.service} {record.version}: does it change what decides a {code}?"
        diff = run.probe(why, "query_deploy_diff", {"version": record.version, "service": status.service})
        report = diff_of(diff) if diff is not None else None
        changes = changeclass.with_option_lines(report.key_changes, report.diff) if report else []
        deciding = [c for c in changes if changeclass.class_of(c) in _DECIDES.get(code, ())]
        if deciding:
            findings.status = status.with_change(record, deciding)
            return
