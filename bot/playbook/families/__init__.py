"""Incident families with no deploy behind them: nodes or a zone gone, an operation someone ran, a credential refused,
stale data from a producer, a client status the error rate does not count; the hypotheses and how each is worded."""
