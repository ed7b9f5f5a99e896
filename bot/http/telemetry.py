"""opsbot's own metrics, in a registry of its own (never the process-global one), served at /metrics.

Per-step counters (tool calls, tool errors, tokens) move while a diagnosis runs, through `on_step`;
per-run metrics (diagnoses, steps, duration, gate hits) are recorded when the trace is done. `instrument`
wraps a responder so every surface gets both, counted once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from bot.engine.types import Question, Responder, Step, StepObserver, StopReason, Trace

log = logging.getLogger(__name__)


NON_TOOL_ACTIONS = frozenset({"", "finish"})
STEP_BUCKETS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20)
DURATION_BUCKETS_S = (0.5, 1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300)
ACK_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5)
PROBABILITY_BUCKETS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0)


class Telemetry:
    """All of opsbot's metrics. Construct one per process (or per test) and share it through wiring."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.diagnoses = Counter(
            "opsbot_diagnoses",
            "Finished runs by intent, stop reason and source",
            ["intent", "stop_reason", "source"],
            registry=r,
        )
        self.intents = Counter("opsbot_intents", "Routed messages by route and tier", ["route", "tier"], registry=r)
        self.intent_probability = Histogram(
            "opsbot_intent_probability",
            "The intent gate's probability (confidence) for the route it chose, by tier",
            ["tier"],
            buckets=PROBABILITY_BUCKETS,
            registry=r,
        )
        self.intent_confirmations = Counter(
            "opsbot_intent_confirmations",
            "Investigations the cheap model was asked to confirm (text also asking for less), by the route it chose",
            ["route"],
            registry=r,
        )
        self.intent_confirmation_seconds = Counter(
            "opsbot_intent_confirmation_seconds", "Time spent on those confirmations", registry=r
        )
        self.in_progress = Gauge("opsbot_diagnoses_in_progress", "Runs executing now", registry=r)
        self.steps = Histogram("opsbot_diagnosis_steps", "Steps per run", buckets=STEP_BUCKETS, registry=r)
        self.duration = Histogram(
            "opsbot_diagnosis_duration_seconds", "Wall time per run", buckets=DURATION_BUCKETS_S, registry=r
        )
        self.tokens = Counter("opsbot_llm_tokens", "LLM tokens used", ["kind"], registry=r)
        self.step_count = Counter("opsbot_steps", "Loop steps by status, counted live", ["status"], registry=r)
        self.tool_calls = Counter("opsbot_tool_calls", "Tool calls by tool", ["tool"], registry=r)
        self.tool_errors = Counter("opsbot_tool_errors", "Tool calls that failed, by tool", ["tool"], registry=r)
        self.gate_hits = Counter("opsbot_gate_hits", "Runs or steps stopped by a gate", ["gate"], registry=r)
        self.llm_errors = Counter(
            "opsbot_llm_errors",
            "Failed LLM attempts by kind (the SDK's retried ones and unreadable 200 replies too)",
            ["kind"],
            registry=r,
        )
        self.ack = Histogram(
            "opsbot_slack_ack_seconds", "Time from Slack request to ack", buckets=ACK_BUCKETS_S, registry=r
        )
        self.slack_api_errors = Counter(
            "opsbot_slack_api_errors",
            "Failed Slack Web API attempts (429s retried too) by method and error",
            ["method", "error"],
            registry=r,
        )
        self.stream_fallbacks = Counter(
            "opsbot_slack_stream_fallbacks",
            "Runs whose chat stream failed and fell back to an edited message",
            ["error"],
            registry=r,
        )
        self.chart_failures = Counter(
            "opsbot_chart_failures",
            "Charts not posted (the answer kept its sparkline), by reason: Slack's error code, upload or draw",
            ["reason"],
            registry=r,
        )
        self.queue_depth = Gauge("opsbot_queue_depth", "Diagnoses waiting for a worker", ["queue"], registry=r)
        self.alerts = Counter("opsbot_alerts", "Alertmanager groups by outcome", ["outcome"], registry=r)
        self.api_requests = Counter("opsbot_api_requests", "HTTP API requests", ["route", "code"], registry=r)

    def on_step(self, step: Step) -> None:
        """StepObserver: live counters, so /metrics moves while a diagnosis runs."""
        self.step_count.labels(step.status).inc()
        if step.prompt_tokens or step.completion_tokens:
            self.tokens.labels("prompt").inc(step.prompt_tokens)
            self.tokens.labels("completion").inc(step.completion_tokens)
        if step.status == "refused":
            self.gate_hits.labels("tool_args").inc()
        if step.action in NON_TOOL_ACTIONS or step.status == "format_error":
            return
        self.tool_calls.labels(step.action).inc()
        if step.status == "error":
            self.tool_errors.labels(step.action).inc()

    def observe_trace(self, trace: Trace, *, source: str = "") -> None:
        """Per-run metrics, once the trace is final. Tokens the steps did not carry (intent, summaries) too."""
        intent = trace.intent.route if trace.intent else "unknown"
        self.diagnoses.labels(intent, trace.stop_reason.value, source or "unknown").inc()
        if trace.intent is not None:
            self.intents.labels(trace.intent.route, trace.intent.tier).inc()
            self.intent_probability.labels(trace.intent.tier).observe(trace.intent.confidence)
            if trace.intent.confirm_ms:  # its tokens are in the totals, counted below with the others outside steps
                self.intent_confirmations.labels(trace.intent.route).inc()
                self.intent_confirmation_seconds.inc(trace.intent.confirm_ms / 1000)
        self.steps.observe(len(trace.steps))
        self.duration.observe(trace.totals.elapsed_ms / 1000)
        if trace.stop_reason is not StopReason.FINISH:
            self.gate_hits.labels(trace.stop_reason.value).inc()
        self.tokens.labels("prompt").inc(max(0, trace.totals.prompt_tokens - sum(s.prompt_tokens for s in trace.steps)))
        self.tokens.labels("completion").inc(
            max(0, trace.totals.completion_tokens - sum(s.completion_tokens for s in trace.steps))
        )

    def observe_ack(self, seconds: float) -> None:
        self.ack.observe(seconds)

    def set_queue_depth(self, depth: int, queue: str = "slack") -> None:
        self.queue_depth.labels(queue).set(depth)

    def watch_queue_depth(self, depth: Callable[[], float], queue: str = "slack") -> None:
        """Read a queue's depth at every scrape (for pools that report no changes themselves)."""
        self.queue_depth.labels(queue).set_function(depth)

    def ack_timer(self, next_: Callable[[], Any]) -> Any:
        """Bolt global middleware (`app.use(telemetry.ack_timer)`): the time until the listeners have acked.

        opsbot's listeners only ack and enqueue, so the middleware chain's duration is the ack latency.
        """
        started = time.monotonic()
        try:
            return next_()
        finally:
            self.observe_ack(time.monotonic() - started)

    def observe_llm_error(self, kind: str) -> None:
        """OpenAILLM's on_error, once per failed attempt: rate_limited, server_error, timeout, connection, auth,
        bad_request, bad_reply (a 200 that is garbage, truncated or has no choices) or other.

        Runs that ended because the LLM stayed down are counted by opsbot_diagnoses{stop_reason="llm_unavailable"}.
        """
        self.llm_errors.labels(kind).inc()

    def observe_slack_api_error(self, method: str, error: str) -> None:
        """The Slack client's error watch: one failed Web API attempt (e.g. chat.update, ratelimited)."""
        self.slack_api_errors.labels(method, error).inc()

    def observe_chart_failure(self, reason: str) -> None:
        self.chart_failures.labels(reason).inc()

    def observe_stream_fallback(self, error: str) -> None:
        """ThreadProgress's hook: a chat stream failed and the run fell back to editing one message."""
        self.stream_fallbacks.labels(error).inc()

    def observe_alert(self, outcome: str) -> None:
        self.alerts.labels(outcome).inc()

    def observe_api(self, route: str, code: int) -> None:
        self.api_requests.labels(route, str(code)).inc()

    def instrument(self, responder: Responder) -> Responder:
        """Wrap a responder: live step counters, the in-progress gauge, and the per-run metrics."""

        def run(question: Question, on_step: StepObserver | None) -> Trace:
            def observe(step: Step) -> None:
                self.on_step(step)
                if on_step is not None:
                    on_step(step)

            with self.in_progress.track_inprogress():
                trace = responder(question, observe)
            self.observe_trace(trace, source=question.source)
            return trace

        return run

    def exposition(self) -> tuple[bytes, str]:
        """The registry in the Prometheus text format, and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
