"""Every opt-in family, in a stable order, for the services that carry its signals (none for a scenario that sets
no opt-in signal, so its OpenMetrics text is what it was before these existed)."""

from __future__ import annotations

from collections.abc import Iterator

from bot.sandbox.exporters.brokers import broker_families
from bot.sandbox.exporters.clients import client_families
from bot.sandbox.exporters.kubestate import kubestate_families
from bot.sandbox.exporters.node import node_families
from bot.sandbox.exporters.postgres import postgres_families
from bot.sandbox.exporters.runtime import runtime_families
from bot.sandbox.exporters.text import Family
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals


def exporter_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    every = (kubestate_families, node_families, runtime_families, broker_families, postgres_families, client_families)
    for families in every:
        yield from families(scenario, signals)
