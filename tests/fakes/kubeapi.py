"""The Kubernetes API stand-in the tests use: one implementation, in bot/sandbox (the sandbox serves it too)."""

from bot.sandbox.standins.kubeapi import TOKEN, FakeKubeAPI
from bot.sandbox.standins.kubeobjects import container_status, deployment, event, iso, pod, replicaset, status_object

__all__ = [
    "TOKEN",
    "FakeKubeAPI",
    "container_status",
    "deployment",
    "event",
    "iso",
    "pod",
    "replicaset",
    "status_object",
]
