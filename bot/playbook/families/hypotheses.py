"""Hypotheses without a deploy, as the playbook found them: an operation a named actor ran, stale data from a producer,
a client status (429, 401) a service answers. Each words itself for the headline (bot/playbook/verdict.py). A leaf.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from tools.analysis.configdiff import KeyChange
from tools.deploys.records import DeployRecord


@dataclass(frozen=True)
class Operation:
    """An operation a named actor ran on a service at the onset, with the line that recorded it."""

    at: datetime
    service: str
    actor: str
    line: str
    blocking: str = ""  # the database's lines that show its session holding others up, when some do
    throttled: str = ""  # a line of its own service since it ran, saying a dependency throttles it (429, a quota)

    def describe(self) -> str:
        wait = f'; the database records its session holding others up: "{self.blocking}"' if self.blocking else ""
        return (
            f"an operation by {self.actor} on {self.service} at {self.at:%H:%M} UTC, no deploy caused this: "
            f'"{self.line}"{wait}'
        )


@dataclass(frozen=True)
class Staleness:
    """A flat service whose own lines say what it serves is stale, and the producer near it whose errors began first."""

    service: str
    line: str  # the service's line that says so
    since: datetime  # when it first said so
    producer: str
    error: str  # the producer's error that began before it
    producer_since: datetime
    change: str = ""  # what changed upstream that the producer's line names, in words ("" when nothing did)

    def describe(self) -> str:
        cause = f"; what changed there: {self.change}" if self.change else ""
        return (
            f"{self.service} itself looks healthy, but what it serves is stale since {self.since:%H:%M} UTC "
            f'("{self.line}"): {self.producer}, which feeds it, has been failing since {self.producer_since:%H:%M} '
            f'UTC and lags behind its input: "{self.error}"{cause}'
        )


@dataclass(frozen=True)
class NodeFault:
    """A node whose pods alone, of several services, log what is new since the onset, and what Kubernetes said."""

    node: str
    services: tuple[str, ...]
    line: str  # the biggest new signature's line
    event: str  # "NTPProblem: ..." ("" when Kubernetes reported nothing about it)
    at: datetime

    def describe(self) -> str:
        event = f"; Kubernetes reported {self.event}" if self.event else ""
        return (
            f"node {self.node} is at fault, no deploy caused this: since {self.at:%H:%M} UTC the pods of "
            f"{' and '.join(self.services)} on {self.node} alone log new warnings and errors, while their pods on "
            f'other nodes stay quiet: "{self.line}"{event}'
        )


@dataclass(frozen=True)
class StatusAnswered:
    """A service answering a client status its error rate does not count, since when, and the deploy of the day
    before that changed what decides it (when one did)."""

    code: str
    service: str
    since: datetime
    line: str
    count: int  # lines of its biggest signature (the number the logs print)
    deploy: DeployRecord | None = None
    changes: tuple[KeyChange, ...] = ()

    def with_change(self, deploy: DeployRecord, changes: Sequence[KeyChange]) -> StatusAnswered:
        return replace(self, deploy=deploy, changes=tuple(changes))

    def describe(self) -> str:
        seen = (
            f"{self.service} answers {self.code} since {self.since:%H:%M} UTC, which its error rate (5xx) does not "
            f'count: {self.count:,} lines like "{self.line}"'
        )
        if self.deploy is None:
            return seen + "; no deploy of the day before changed what decides it"
        what = "; ".join(f"{c.key} {c.old} → {c.new}" for c in self.changes[:3])
        return (
            f"deploy {self.deploy.service} {self.deploy.version} at {self.deploy.at:%Y-%m-%d %H:%M} UTC changed "
            f"{what}, and it bit when load met it: {seen}"
        )
