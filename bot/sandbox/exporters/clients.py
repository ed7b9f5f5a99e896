"""A service's outbound calls and retries per called service, as an HTTP client library exports them.

Micrometer's `http_client_requests_seconds_count{peer, method, outcome}` counts the calls to each downstream
service, and `http_client_retries_total{peer}` the retries a resilience library made, so a retry storm between
two services shows on the caller's side even when the callee's own traffic is all that moved. `retry_peer` names
the one downstream service the retries go to; without it they go to each.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.sandbox.exporters.text import Family, carrying, cumulative, service_target
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals


def client_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    callers = [s for s in carrying(scenario, signals, "client_calls_per_s") if scenario.service(s.service).downstream]
    yield (
        "http_client_requests_seconds_count",
        "counter",
        (
            service_target(s).lines(
                "http_client_requests_seconds_count",
                cumulative([v * 60 for v in s.values["client_calls_per_s"]]),
                peer=peer,
                method="GET",
                outcome="SUCCESS",
            )
            for s in callers
            for peer in scenario.service(s.service).downstream
        ),
    )
    retrying = carrying(scenario, signals, "client_retries_per_s")
    yield (
        "http_client_retries_total",
        "counter",
        (
            service_target(s).lines(
                "http_client_retries_total", cumulative([v * 60 for v in s.values["client_retries_per_s"]]), peer=peer
            )
            for s in retrying
            for peer in _retry_peers(scenario, s.service)
        ),
    )


def _retry_peers(scenario: Scenario, service: str) -> tuple[str, ...]:
    own = scenario.service(service)
    named = own.labels.get("retry_peer", "")
    return (named,) if named else own.downstream
