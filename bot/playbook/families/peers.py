"""Which peer refuses a credential: one host of several, read from the failing lines' own fields.

A client talks to a service through several hosts (relays, shards, regional endpoints). When one host's certificate
expires, or one endpoint stops taking a key, only the calls routed there fail, so the error rate moves by that host's
share and the fix is on that host. The failing lines name it in a field (upstream_host, peer, server, endpoint); the
hosts they name, counted, show whether the refusals come from one host or from all of them, and the callee in the
topology that host belongs to is the peer to name.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from bot.playbook.families.causes import REFUSED_FOR_STATE, refused_credential
from bot.playbook.findings import Findings
from bot.playbook.probes import ProbeRun
from tools.logs.model import LogEntry

_HOST_KEY = re.compile(r"host|peer|upstream|server|endpoint|remote|addr", re.IGNORECASE)


def check_refusing_peer(run: ProbeRun, findings: Findings, topology: Mapping[str, Sequence[str]]) -> None:
    """A credential refused for its state: the hosts its failing lines name, counted, and the callee that is."""
    refused = refused_credential(findings)
    if refused is None or "query_logs" not in run.tools:
        return
    service = refused[0]
    thought = (
        f"{service}'s calls are refused for a credential's state; reading its failing lines' fields: do the "
        "refusals come from one host of several (one certificate, one endpoint) or from every host?"
    )
    args = {"service": service, "level": "ERROR,WARN", "range": run.window.range_arg, "limit": 200}
    summary = run.read_logs(thought, args)
    if summary is None:
        return
    hosts: Counter[str] = Counter()
    for line in summary.newest:
        if REFUSED_FOR_STATE.search(line.entry.message):
            hosts.update({host: 1 + line.more for host in _hosts_of(line.entry)})
    if not hosts:
        return
    host, count = hosts.most_common(1)[0]
    peer = _peer_of(host, topology.get(service, ()))
    share = f"{count:,} of the {sum(hosts.values()):,} refused lines read name it"
    findings.refused_peer = f"{peer} host {host} ({share})" if peer else f"host {host} ({share})"


def _hosts_of(entry: LogEntry) -> list[str]:
    return list(dict.fromkeys(value for key, value in entry.fields if _HOST_KEY.search(key) and value))


def _peer_of(host: str, callees: Sequence[str]) -> str:
    """The callee the host belongs to: one whose name shares a word with the host's name, else the only callee."""
    host_words = set(re.split(r"[^a-z0-9]+", host.casefold()))
    for callee in callees:
        if any(len(w) > 3 and w in host_words for w in re.split(r"[^a-z0-9]+", callee.casefold())):
            return callee
    return callees[0] if len(callees) == 1 else ""
