"""A neighbour's change that lands on a dependency it shares with the asked service: the connections it holds there.

A pool or concurrency setting sizes how much of a shared server one client takes. Raise it in one caller and the
server's connection slots run out for every caller: the asked service's errors then say the server refused it ("too
many clients", "connection slots are reserved"), while the changed caller itself looks healthy, holding the slots.
So a pool change in another caller of a dependency the asked service shares counts when the errors since the onset
say that server ran out of slots; the client's own pool running dry ("connection is not available") is not this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import tools.analysis.changeclass as changeclass
from bot.playbook.findings import Findings, Suspect
from tools.analysis.reasons import Reason

# A server refusing new connections because every slot is taken (not a client's own pool running dry).
_SLOTS_RX = re.compile(
    r"too many (?:clients|connections)|connection slots|max_connections|remaining connection", re.IGNORECASE
)


def shared_slots_reasons(
    findings: Findings, topology: Mapping[str, Sequence[str]], suspect: Suspect, target: str
) -> list[Reason]:
    """+3 for a pool change in another caller of a dependency `target` shares, when the server ran out of slots."""
    service = suspect.service
    shared = [d for d in topology.get(service, ()) if d in topology.get(target, ())]
    if service == target or not shared or suspect.deploy is None:
        return []
    pools = [c for c in changeclass.expanded(suspect.key_changes) if changeclass.class_of(c) == changeclass.POOL]
    refused = next((sig for found in findings.signatures.values() for sig in found if _SLOTS_RX.search(sig.text)), None)
    if not pools or refused is None:
        return []
    change = pools[0]
    why = (
        f"{service} shares {', '.join(shared)} with {target}: its change to {change.key} ({change.old} → {change.new}) "
        f"sizes the connections it holds there, and the errors since the onset say the server ran out of slots: "
        f"{refused.quoted}"
    )
    return [Reason(3, why)]
