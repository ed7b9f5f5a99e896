"""Alertmanager webhooks (payload version 4): which groups deserve a diagnosis, the question, the dedupe key.

Alertmanager re-sends a group every `group_interval`/`repeat_interval` while it fires. A diagnosis costs
minutes of model time, so a group runs once per set of firing alerts (its groupKey plus each alert's
fingerprint and startsAt): a re-notification of the same set is skipped, a new alert in the group is not.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from bot.safety.inbound import clean_inbound

MAX_ALERTS_IN_QUESTION = 5
MAX_QUESTION_CHARS = 4_000


class Alert(BaseModel):
    model_config = ConfigDict(extra="ignore")

    status: str = "firing"
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: str = ""  # Alertmanager's field names, kept as sent
    fingerprint: str = ""


class AlertGroup(BaseModel):
    """The webhook body, as far as opsbot reads it; unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    version: str = "4"
    groupKey: str
    status: str
    receiver: str = ""
    groupLabels: dict[str, str] = Field(default_factory=dict)
    commonLabels: dict[str, str] = Field(default_factory=dict)
    commonAnnotations: dict[str, str] = Field(default_factory=dict)
    alerts: list[Alert] = Field(default_factory=list)

    @property
    def firing(self) -> list[Alert]:
        return [a for a in self.alerts if a.status == "firing"]


def alert_identity(alert: Alert) -> str:
    """Alertmanager's fingerprint, or a hash of the sorted labels when a sender leaves it out."""
    if alert.fingerprint:
        return alert.fingerprint
    labels = ",".join(f"{k}={v}" for k, v in sorted(alert.labels.items()))
    return hashlib.sha256(labels.encode()).hexdigest()[:16]


def dedupe_key(group: AlertGroup) -> str:
    """One key per (group, set of firing alerts with their start times)."""
    members = sorted(f"{alert_identity(a)}@{a.startsAt}" for a in group.firing)
    return hashlib.sha256("\n".join([group.groupKey, *members]).encode()).hexdigest()


def question_from_alerts(group: AlertGroup, service_label: str = "service") -> str:
    """A diagnosis question from the firing alerts' labels and annotations (what a person would ask)."""
    firing = group.firing
    first = firing[0] if firing else Alert()
    labels = {**group.commonLabels, **first.labels}
    name = _untrusted(labels.get("alertname", ""), 120) or "an alert"
    service = _untrusted(labels.get(service_label, ""), 120)
    head = f"Alertmanager: {name} is firing" + (f" for service {service}" if service else "")
    starts = sorted(_untrusted(a.startsAt, 40) for a in firing if a.startsAt)
    lines = [head + (f" since {starts[0]}." if starts else ".")]
    for alert in firing[:MAX_ALERTS_IN_QUESTION]:
        notes = {**group.commonAnnotations, **alert.annotations}
        text = _untrusted(" ".join(t for t in (notes.get("summary", ""), notes.get("description", "")) if t), 600)
        if text:
            lines.append(f"- {text}")
    if len(firing) > MAX_ALERTS_IN_QUESTION:
        lines.append(f"- and {len(firing) - MAX_ALERTS_IN_QUESTION} more alerts in this group")
    lines.append("What is the root cause?")
    return clean_inbound("\n".join(lines), max_chars=MAX_QUESTION_CHARS)


def _untrusted(text: str, max_chars: int) -> str:
    """A label or annotation through the inbound boundary, on one line (alerts are written by anyone)."""
    return " ".join(clean_inbound(text, max_chars=max_chars).split())


class AlertDedupe(Protocol):
    def first_time(self, key: str) -> bool:
        """True exactly once per key within its time to live (atomic check-and-set)."""
        ...

    def forget(self, key: str) -> None:
        """Let the key run again (the run could not start)."""
        ...


class TtlDedupe:
    """In-process dedupe with a time to live. One replica; several replicas need a shared store."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._expires: dict[str, float] = {}

    def first_time(self, key: str) -> bool:
        now = self._clock()
        with self._lock:
            self._expires = {k: t for k, t in self._expires.items() if t > now}
            if key in self._expires:
                return False
            self._expires[key] = now + self.ttl_s
            return True

    def forget(self, key: str) -> None:
        with self._lock:
            self._expires.pop(key, None)
