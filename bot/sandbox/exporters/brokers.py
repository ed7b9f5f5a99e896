"""Message brokers: a RabbitMQ queue's ready messages and a Kafka consumer group's lag (kafka_exporter)."""

from __future__ import annotations

from collections.abc import Iterator

from bot.sandbox.exporters.text import Family, carrying, gauge, service_target
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals

PARTITIONS = 3  # the lag is spread over the topic's partitions; sum() gives the group's lag


def broker_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    queues = carrying(scenario, signals, "queue_depth")
    yield (
        "rabbitmq_queue_messages_ready",
        "gauge",
        (
            service_target(s).lines(
                "rabbitmq_queue_messages_ready",
                gauge(s.values["queue_depth"], digits=0),
                vhost="/",
                queue=scenario.service(s.service).label("queue"),
            )
            for s in queues
        ),
    )
    lagging = carrying(scenario, signals, "consumer_lag")
    yield (
        "kafka_consumergroup_lag",
        "gauge",
        (
            service_target(s).lines(
                "kafka_consumergroup_lag",
                gauge(s.values["consumer_lag"], 1 / PARTITIONS, 0),
                consumergroup=scenario.service(s.service).label("consumer_group"),
                topic=scenario.service(s.service).label("topic"),
                partition=str(partition),
            )
            for s in lagging
            for partition in range(PARTITIONS)
        ),
    )
