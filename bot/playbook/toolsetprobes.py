"""The playbook's probes of the optional toolsets: the pods of the service the cause points at (Kubernetes) and
the runbook section that documents the failure (runbooks). Each runs only when its tool is configured.
"""

from __future__ import annotations

import re

from bot.playbook.findings import Findings
from bot.playbook.probes import ProbeRun

_PLACEHOLDER = re.compile(r"<\w+>|\[[\w.$]+\]")  # a signature's <n>, <uuid> and [exception.Type] carry no words
_TERMINATED = re.compile(r"last terminated: (\w+) exit (\d+)")
_WAITING = re.compile(r"waiting: (\w+)")
_CITATION = re.compile(r"Runbook: [^\n]+? § [^\n]+")
_PUNCTUATION = ".,:;()'\"[]"


def check_pods(run: ProbeRun, findings: Findings) -> None:
    """The pods (when the Kubernetes toolset is on) of the service the cause points at: the deployed one, else the
    deepest changed dependency, else the one asked about. Restarts, waiting reasons, last terminations."""
    service = findings.deploy.service if findings.deploy else findings.origin or findings.service
    if "query_pods" not in run.tools or not service:
        return
    thought = (
        f"Reading {service}'s pods: restarts, CrashLoopBackOff or an OOMKilled termination "
        "would explain a change the metrics only show the effect of."
    )
    observation = run.call(thought, "query_pods", {"namespace": "", "service": service})
    if run.steps[-1].status != "ok":
        return
    head = observation.splitlines()[0]
    findings.pod_service = service
    findings.pod_summary = (head.split(": ", 1)[1] if ": " in head else head).split("; states: ")[0]
    states = [f"{m.group(1)} exit {m.group(2)}" for m in _TERMINATED.finditer(observation)]
    states += [m.group(1) for m in _WAITING.finditer(observation)]
    findings.pod_states = list(dict.fromkeys(states))


def check_runbooks(run: ProbeRun, findings: Findings, question: str) -> None:
    """The runbook section that best matches the findings, else the question.

    The search takes a dozen terms (stopwords aside), most specific first: the pod states, the changed settings
    (not the image tag every deploy bumps), then the error signature's words.
    """
    if "search_runbooks" not in run.tools:
        return
    # the runbook of the service that was changed (its deploy) or that the question is about, not the origin's
    service = findings.deploy.service if findings.deploy else findings.service
    signature = findings.top_signature(service) or (
        findings.top_signature(findings.origin) if findings.origin else None
    )
    keys = [c.key.rsplit(".", 1)[-1] for c in findings.key_changes if not c.key.endswith("newTag")][:3]
    words = [*(s.split()[0] for s in findings.pod_states), *keys]
    if signature is not None:
        words += [w for w in _PLACEHOLDER.sub(" ", signature.text).split() if any(c.isalnum() for c in w)]
    query = " ".join(dict.fromkeys(w.strip(_PUNCTUATION) for w in words if w.strip(_PUNCTUATION))) or question
    found_any = signature or keys or findings.pod_states
    what = "the pod states, changed settings and error signature found" if found_any else "the question"
    thought = f"Looking for the runbook section that documents this failure, from {what}."
    observation = run.call(thought, "search_runbooks", {"query": query[:300], "service": service})
    found = _CITATION.search(observation)
    findings.runbook = found.group(0).strip() if found else ""
