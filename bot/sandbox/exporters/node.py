"""node_exporter: a filesystem's size and free space, and the clock's offset from true time.

Per node for a per-pod service (labels node and zone: the nodes its pods ran on), else once for the service (its
host). Names and labels as node_exporter exports them (mountpoint, device, fstype).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from bot.sandbox.exporters.text import Family, carrying, gauge, node_targets
from bot.sandbox.scenario import Scenario
from bot.sandbox.signals import ServiceSignals

GB = 1e9
SYNCED_WITHIN_MS = 100.0  # node_timex_sync_status drops to 0 once the offset is this large (NTP lost)


def node_families(scenario: Scenario, signals: list[ServiceSignals]) -> Iterator[Family]:
    disks = [(sig, t) for sig in carrying(scenario, signals, "disk_capacity_gb") for t in node_targets(scenario, sig)]

    def fs(sig: ServiceSignals) -> dict[str, str]:
        mountpoint = scenario.service(sig.service).label("disk_mountpoint")
        return {"mountpoint": mountpoint, "device": "/dev/nvme1n1", "fstype": "ext4"}

    yield (
        "node_filesystem_size_bytes",
        "gauge",
        (
            t.lines("node_filesystem_size_bytes", gauge(t.values["disk_capacity_gb"], GB, 0), labels=fs(s))
            for s, t in disks
        ),
    )
    yield (
        "node_filesystem_avail_bytes",
        "gauge",
        (
            t.lines("node_filesystem_avail_bytes", gauge(_free(t.values), GB, 0), labels=fs(s))
            for s, t in disks
            if "disk_used_gb" in t.values
        ),
    )
    clocks = [t for sig in carrying(scenario, signals, "clock_offset_ms") for t in node_targets(scenario, sig)]
    yield (
        "node_timex_offset_seconds",
        "gauge",
        (t.lines("node_timex_offset_seconds", gauge(t.values["clock_offset_ms"], 1e-3)) for t in clocks),
    )
    yield (
        "node_timex_sync_status",
        "gauge",
        (
            t.lines("node_timex_sync_status", [float(abs(v) < SYNCED_WITHIN_MS) for v in t.values["clock_offset_ms"]])
            for t in clocks
        ),
    )


def _free(values: Mapping[str, Sequence[float]]) -> list[float]:
    return [max(0.0, c - u) for c, u in zip(values["disk_capacity_gb"], values["disk_used_gb"], strict=True)]
