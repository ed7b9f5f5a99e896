"""The per-minute values behind a scenario's series: effect shapes (`shapes`), the opt-in signals and the
autoscaler's replicas (`extras`), and the per-pod and per-node breakdown of a per-pod service (`pods`).
bot/sandbox/signals.py puts them together for every service."""
