"""Causes no deploy made, worded for the headline: nodes that went away (Kubernetes events) and a credential that a
service's calls are refused for (an expired secret or certificate, a revoked token); and the failure a retry setting
amplified, named beside the deploy that changed it.

A credential is refused for its state, not for what a deploy changed: when the errors since the onset say the secret,
token or certificate expired, was revoked or is not valid, and no deploy before it changed a credential setting, the
credential is the cause, and the deploy that changed something else is not named.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import tools.analysis.changeclass as changeclass
from bot.playbook.collectiongap import gap_headline
from bot.playbook.evidence import LogSignature
from bot.playbook.findings import Findings, NodeLoss, Suspect
from bot.playbook.flatline import flat_headline
from tools.analysis.configdiff import KeyChange

# What a refused credential's error says about the credential itself (a bare 401 can be a bug in the caller).
REFUSED_FOR_STATE = re.compile(
    r"\b(?:expired|has expired|revoked|invalid_client|invalid_grant|not yet valid|certificate (?:has )?expired)\b",
    re.IGNORECASE,
)
# Settings that carry or point at a credential: a deploy changing one of these can be what the server refuses.
_CREDENTIAL_KEY = re.compile(r"secret|token|password|credential|cert|tls|ssl|api.?key|client.?id|auth", re.IGNORECASE)


def node_cause(loss: NodeLoss) -> str:
    """Infrastructure, said plainly: no deploy caused it."""
    where = f" in zone {' and '.join(loss.zones)}" if loss.zones else ""
    if loss.operation:
        return (
            f"a node was taken out at {loss.at:%H:%M} UTC, no deploy caused this: Kubernetes stopped the pods of "
            f"{', '.join(loss.services)} together ({', '.join(loss.reasons)}), and the logs record the operation: "
            f'"{loss.operation}"'
        )
    return (
        f"nodes{where} went away at {loss.at:%H:%M} UTC, no deploy caused this: Kubernetes reports "
        f"{', '.join(loss.reasons)} for the pods of {', '.join(loss.services)} on them"
    )


def refused_credential(findings: Findings) -> tuple[str, LogSignature] | None:
    """(service, signature) when the errors read say a credential was refused for its state and no deploy read
    changed a credential setting; None otherwise."""
    changes: list[KeyChange] = [*findings.key_changes, *(c for s in findings.suspects for c in s.key_changes)]
    if any(_CREDENTIAL_KEY.search(c.key) for c in changes):
        return None
    order = [findings.service, findings.origin, *findings.signatures]
    for service in dict.fromkeys(s for s in order if s):
        if findings.log_levels.get(service) != "ERROR":
            continue
        found = next((sig for sig in findings.signatures.get(service, ()) if REFUSED_FOR_STATE.search(sig.text)), None)
        if found is not None:
            return service, found
    return None


def credential_cause(service: str, signature: LogSignature, peer: str = "") -> str:
    """The refused credential, by whom when the lines name a host, with the error that says why; no deploy named
    (none changed a credential)."""
    by = f" by {peer}" if peer else ""
    return (
        f'a credential {service} uses was refused{by}: {signature.count:,} errors like "{signature.quoted}"; '
        "no deploy before it changed a credential setting, so the credential's own state (expired, revoked) is the "
        "cause, not a release"
    )


def not_a_release(findings: Findings) -> str | None:
    """A cause no deploy made that outranks the deploys read: nodes that went away, a credential refused for its
    state."""
    if findings.node_loss is not None:
        return node_cause(findings.node_loss)
    if findings.node_fault is not None:
        return findings.node_fault.describe()
    refused = refused_credential(findings)
    return credential_cause(*refused, findings.refused_peer) if refused is not None else None


def amplified_failure(findings: Findings, suspect: Suspect) -> str:
    """A retry or timeout setting waits for a failure to amplify: the dependency that degraded first is that failure,
    named beside the setting ("" for other changes, or when no dependency below degraded)."""
    origin = findings.health.get(findings.origin) if findings.origin else None
    if origin is None or origin.service == suspect.service or not origin.changes():
        return ""
    if not any(changeclass.class_of(c) == changeclass.TIMEOUT for c in suspect.key_changes):
        return ""
    return f". The failure it amplified: {origin.service} degraded first ({origin.describe(*origin.changes()[0])})"


def files_of(changes: Sequence[KeyChange]) -> str:
    """ " in <file>" for the files the changed settings live in (teams know a setting by its file: a tenant's rules,
    a client's config); "" for an image bump alone, whose file only carries the version."""
    files = [c.path for c in changes if c.path and changeclass.class_of(c) != changeclass.IMAGE]
    return f" in {', '.join(dict.fromkeys(files))}" if files else ""


def flat_or_stale(findings: Findings) -> tuple[str, bool]:
    """The asked service did not change: stale data from a producer near it when its lines say so, else flat."""
    if findings.stale is not None:
        return f"Likely cause: {findings.stale.describe()}.", True
    if findings.node_fault is not None:
        return f"Likely cause: {findings.node_fault.describe()}.", True
    if findings.status is not None:
        return f"Likely cause: {findings.status.describe()}.", findings.status.deploy is not None
    if findings.operation is not None and findings.behind:
        return f"Likely cause: {findings.operation.describe()}. What it left behind: {findings.behind}.", True
    return gap_headline(findings) or flat_headline(findings), False
