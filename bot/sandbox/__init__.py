"""The incident sandbox: scenario files -> Prometheus history, log documents and a git deploy repo; local backends."""
