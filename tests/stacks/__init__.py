"""Teams' stacks built from the conventions they follow, each with a planted incident: metrics as OpenMetrics for
promtool into a real Prometheus, log documents into the Elasticsearch stand-in, deploys in a real git repository.

spec.py describes the stacks, metrics.py, logs.py and gitops.py write each part the way that convention writes it
(not the way opsbot reads it: the builder is the ground truth `opsbot init` is tested against), build.py builds
and starts one, fixtures.py holds the session fixtures.
"""
