"""What the model reads about query_metrics and list_services: when to use each, legal values, how much returns."""

QUERY_METRICS_DOC = """\
One metric of one service from Prometheus over a time window.
Use it for WHEN a symptom started and how big it is, where find_changes did not already say.
Legal values:
- metric (unit):
{metrics}
- service: a Prometheus label value (list_services lists them)
- range: <n>m|h|d ending now ("30m", "6h", "7d"), or ISO "2026-11-28T14:00Z/2026-11-28T16:00Z"
- by: "" (the service as a whole), "pod", "version" (a canary on 1 of 8 pods shows here when the whole barely \
moves) or "peer" (a client-call metric per called service)
Returns with by: one line per part, the most moved first ("pod-a: 0.10% -> 24% (x240), change at 14:03"), at most 10.
Without by, ~10 lines: the PromQL; min, median, max, last; "change:", "spike:", "trend:", "sawtooth:" or "stopped:" \
lines; 12 averaged points of at most {max_points}; a "limits:" line beside cpu or memory, a "beside:" line (4xx and \
429 shares) beside 5xx errors."""


LIST_SERVICES_DOC = """\
The services Prometheus holds metrics for, each with its downstream services.
Use it when the user named no service, or one that matches none.
Legal values: none.
Returns one line per service ("shipping -> billing, shipping-db"), at most {max_services}, and the total."""
