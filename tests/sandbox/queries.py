"""PromQL against a running sandbox's real Prometheus at a moment relative to its incident, and list calls against
its Kubernetes API stand-in through the official client."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from kubernetes import config as kube_config
from kubernetes.client import AppsV1Api, AutoscalingV2Api, CoreV1Api
from prometheus_api_client import PrometheusConnect


def at(box: Any, minutes: float) -> datetime:
    """The moment `minutes` after the sandbox's incident (negative: before it)."""
    return box.incident_at + timedelta(minutes=minutes)


def vector(box: Any, promql: str, minutes: float) -> list[dict[str, Any]]:
    client = PrometheusConnect(url=box.prometheus_url, disable_ssl=True)
    return list(client.custom_query(promql, params={"time": at(box, minutes).timestamp()}))


def value(box: Any, promql: str, minutes: float) -> float:
    """The single value of `promql` `minutes` after the incident (fails when there is none)."""
    found = vector(box, promql, minutes)
    assert len(found) == 1, f"{promql} at {minutes:+} min: {found}"
    return float(found[0]["value"][1])


def by_label(box: Any, promql: str, minutes: float, label: str) -> dict[str, float]:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in vector(box, promql, minutes)}


def kube_items(box: Any, resource: str, namespace: str = "", selector: str = "") -> list[dict[str, Any]]:
    """A list call through the official client against the sandbox's Kubernetes API stand-in, as plain JSON."""
    api = kube_config.new_client_from_config(config_file=str(box.kubeconfig))
    calls = {
        "nodes": lambda: CoreV1Api(api).list_node(),
        "pods": lambda: CoreV1Api(api).list_namespaced_pod(namespace, label_selector=selector),
        "events": lambda: CoreV1Api(api).list_namespaced_event(namespace),
        "replicasets": lambda: AppsV1Api(api).list_namespaced_replica_set(namespace, label_selector=selector),
        "horizontalpodautoscalers": lambda: AutoscalingV2Api(api).list_namespaced_horizontal_pod_autoscaler(namespace),
    }
    items: list[dict[str, Any]] = api.sanitize_for_serialization(calls[resource]())["items"]
    return items
