"""The catalogue and the topology as the responder reads them: the metric it reads for each role, the saturation
signals it reads after the golden signals, and, per service, the metrics that service's catalogue says it does not
measure (not queried: the answer names them as not checked); and the services as people say them (NamedRouter).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.routing.respond import Router
from tools.base import ToolError, call_tool
from tools.metrics.series import ServiceList
from tools.servicenames import NameReading, services_said

if TYPE_CHECKING:
    from bot.engine.types import Question, StepObserver, Trace

log = logging.getLogger(__name__)


def metric_roles(settings: Settings) -> dict[str, str]:
    """role -> metric name; the first catalogue entry with a role wins (a second one is logged and ignored).
    Saturation is the one role many entries share (saturation_metrics)."""
    roles: dict[str, str] = {}
    for name, metric in settings.prometheus.metrics.items():
        if metric.role == "saturation":
            continue
        if metric.role and metric.role in roles:
            log.warning(
                "metric %r has role %r, already taken by %r; the playbook reads %r",
                name,
                metric.role,
                roles[metric.role],
                roles[metric.role],
            )
        elif metric.role:
            roles[metric.role] = name
    return roles


def saturation_metrics(settings: Settings) -> list[str]:
    """The catalogue entries with the role "saturation", in catalogue order: the playbook reads each."""
    return [name for name, metric in settings.prometheus.metrics.items() if metric.role == "saturation"]


def unmeasured_metrics(settings: Settings) -> dict[str, frozenset[str]]:
    """service -> the catalogue metrics it does not measure (`prometheus.services.<name>.not_measured`)."""
    return {name: frozenset(own.not_measured) for name, own in settings.prometheus.services.items() if own.not_measured}


SERVICE_NAMES = "Service names: "


def with_service_names(answer: str, readings: Sequence[NameReading]) -> str:
    """The answer with one "Service names:" line at its end: each reading once (a word said twice is one reading),
    and a line an inner answer already carries (a router that answered through another, a re-run of a stored
    answer) replaced rather than repeated."""
    said = "; ".join(dict.fromkeys(reading.describe() for reading in readings))
    kept = [line for line in answer.rstrip().split("\n") if not line.startswith(SERVICE_NAMES)]
    body = "\n".join(kept).rstrip()
    return f"{body}\n\n{SERVICE_NAMES}{said}."


@dataclass(frozen=True)
class NamedRouter(Router):
    """A Router that first reads the services a question names as people say them ("checkout" for checkout-api:
    an alias, or, when `guess`, the one service a word starts or ends), asks about the service itself, and names
    each reading at the end of the answer (tools/servicenames.py)."""

    aliases: Mapping[str, Sequence[str]] = field(default_factory=dict)
    topology: Sequence[str] = ()  # the services the topology names, known without asking Prometheus
    guess: bool = False  # also read a word one service's name starts or ends with (settings.guess_service_names)

    def __call__(self, question: Question, on_step: StepObserver | None = None) -> Trace:
        listed = self._listed()
        known = self._known(listed)
        text, readings = services_said(question.text, known, self.aliases, guess=self.guess)
        if not readings:
            return super().__call__(with_services_known(question, known, listed), on_step)
        trace = super().__call__(replace(question, text=text), on_step)
        return replace(trace, question=question.text, answer=with_service_names(trace.answer, readings))

    def known_services(self) -> list[str]:
        """The topology's services, those with aliases, and those Prometheus holds (list_services, cached there)."""
        return self._known(self._listed())

    def _known(self, listed: ServiceList | None) -> list[str]:
        return list(dict.fromkeys([*self.topology, *self.aliases, *(listed.services if listed else ())]))

    def _listed(self) -> ServiceList | None:
        if "list_services" not in self.tools:
            return None
        try:
            data = call_tool(self.tools, "list_services", {}).data
        except ToolError:
            return None
        return data if isinstance(data, ServiceList) else None


KNOWN_SERVICES_MAX_CHARS = 1_200  # about 300 tokens on every request of the run; a larger estate: list_services


def with_services_known(question: Question, known: Sequence[str], listed: ServiceList | None) -> Question:
    """The question with the services opsbot knows attached (each with its downstream ones where Prometheus shows
    them), when it names none of them: the model's first step is then a query, not list_services. A list too long
    to carry on every request is left to list_services."""
    if not known:
        return question
    downstream = listed.downstream if listed else {}
    parts = [f"{name} -> {', '.join(downstream[name])}" if downstream.get(name) else name for name in known]
    line = "services (the question names none of them): " + "; ".join(parts)
    return question if len(line) > KNOWN_SERVICES_MAX_CHARS else replace(question, known=(*question.known, line))
