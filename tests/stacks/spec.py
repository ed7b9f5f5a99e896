"""The stacks: which convention each service's metrics, logs and deploys follow, and the incident planted in it.

- shop: Spring Boot services on Micrometer (`application`) with one Go promhttp service on
  `app_kubernetes_io_name`, ECS logs in daily indices, an Argo CD app-of-apps repository without tags. A
  config-only commit shrinks order's Hikari pool 20 -> 4; then its p99 jumps and its logs fill with
  "Connection is not available, request timed out after 30000ms".
- otel: OpenTelemetry metrics (`service_name`, `http_response_status_code`) and logs, a Flux/kustomize repository.
  checkout 1.4.2 cuts PAYMENTS_TIMEOUT_MS 2000 -> 200; then checkout fails authorisations.
- mesh: metrics only, the conventions neither of the two uses: ingress-nginx, Istio (milliseconds), a Java
  simpleclient summary, Micrometer without a histogram.
- holdout: written after discovery and the playbook were done and run once before any change for it: Istio
  (milliseconds) with one simpleclient summary service on `service`, ECS logs, Flux. reviews 3.2.0 switches
  RATINGS_MERGE eager -> lazy; then reviews fails with a NullPointerException and storefront's errors follow.
The scenario part is bot/sandbox's format (services, timeline, log patterns), read by scenario_from_dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.stacks.gitops import Change, Params
from tests.stacks.metrics import Style


@dataclass(frozen=True)
class StackSpec:
    name: str
    scenario: dict[str, Any]
    styles: Mapping[str, Style]
    logs: str = ""  # ecs | otel | "" (none)
    gitops: str = ""  # argocd | flux | "" (none)
    start: Mapping[tuple[str, str], Params] = field(default_factory=dict)
    changes: tuple[Change, ...] = ()
    question: str = ""  # "{at}" is the incident's HH:MM (UTC)
    must_name: tuple[str, ...] = ()


def _service(p99_ms: float, qps: float, downstream: tuple[str, ...] = (), kind: str = "service") -> dict[str, Any]:
    return {"p99_ms": p99_ms, "qps": qps, "error_ratio": 0.002, "downstream": list(downstream), "kind": kind}


def _scenario(
    name: str, services: dict[str, Any], timeline: list[dict[str, Any]], logs: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "name": name,
        "title": name,
        "question": "",
        "root_cause": "",
        "incident": "-90m",
        "services": services,
        "timeline": timeline,
        "logs": logs,
    }


HIKARI_TRACE = """java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, \
request timed out after 30000ms.
\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)
\tat com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:197)
\tat com.example.order.repository.OrderRepository.save(OrderRepository.java:88)"""

SHOP = StackSpec(
    name="shop",
    scenario=_scenario(
        "shop",
        {
            "web": _service(250, 300, ("order", "inventory"), kind="gateway"),
            "order": _service(180, 120, ("payment",)),
            "payment": _service(140, 60),
            "inventory": _service(40, 200),
        },
        [
            {"service": "order", "metric": "p99_ms", "to": 1600, "shape": "ramp", "ramp_minutes": 3},
            {"service": "order", "metric": "error_ratio", "to": 0.03, "shape": "ramp", "ramp_minutes": 3},
            {"service": "web", "metric": "p99_ms", "to": 1300, "at_minutes": 1, "shape": "ramp", "ramp_minutes": 3},
        ],
        [
            {
                "service": "order",
                "level": "ERROR",
                "logger": "com.zaxxer.hikari.pool.HikariPool",
                "message": "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
                "per_minute": 8,
                "stack_trace": HIKARI_TRACE,
            },
            {
                "service": "web",
                "level": "WARN",
                "logger": "gateway.upstream",
                "message": "upstream order responded slowly: $ms ms (route POST /api/orders)",
                "per_minute": 4,
                "start_minutes": 1,
            },
        ],
    ),
    styles={
        "web": Style("micrometer", "application"),
        "order": Style("micrometer", "application", pool_size=20),
        "payment": Style("micrometer", "application", pool_size=10),
        "inventory": Style("promhttp", "app_kubernetes_io_name"),
    },
    logs="ecs",
    gitops="argocd",
    start={
        ("web", "prod"): {"tag": "3.2.0"},
        ("order", "prod"): {"tag": "2.8.0", "pool": "20"},
        ("payment", "prod"): {"tag": "1.9.3", "pool": "10"},
        ("inventory", "prod"): {"tag": "0.14.2"},
        ("order", "staging"): {"tag": "2.9.0-rc.0", "pool": "20"},
    },
    changes=(
        Change("web", -2 * 1440, "web-team", "web: spring-cloud-gateway 4.1.4", {"tag": "3.2.1"}),
        Change("order", -1440 - 200, "order-team", "order 2.8.1: faster cart totals", {"tag": "2.8.1"}),
        Change("", -60, "platform-team", "Document the rollback procedure"),
        Change("payment", -50, "payment-team", "payment 1.9.4: retry 3-D Secure lookups", {"tag": "1.9.4"}),
        Change("order", -12, "order-team", "order 2.9.0-rc.1 to staging", {"tag": "2.9.0-rc.1"}, env="staging"),
        Change("order", -4, "dev.kim", "order: size the Hikari pool for the new PgBouncer", {"pool": "4"}),
    ),
    question="why is order slow since {at}?",
    must_name=("maximum-pool-size", "20 → 4"),
)

DEADLINE_TRACE = """io.grpc.StatusRuntimeException: DEADLINE_EXCEEDED: deadline exceeded after 0.199s
\tat io.grpc.stub.ClientCalls.toStatusRuntimeException(ClientCalls.java:268)
\tat com.acme.checkout.PaymentsClient.authorize(PaymentsClient.java:57)"""

OTEL = StackSpec(
    name="otel",
    scenario=_scenario(
        "otel",
        {
            "frontend": _service(320, 240, ("checkout", "cart"), kind="gateway"),
            "checkout": _service(300, 80, ("payments",)),
            "payments": _service(150, 70),
            "cart": _service(60, 160),
        },
        [
            {"service": "checkout", "metric": "error_ratio", "to": 0.15, "shape": "ramp", "ramp_minutes": 2},
            {"service": "checkout", "metric": "p99_ms", "to": 900, "shape": "ramp", "ramp_minutes": 2},
            {
                "service": "frontend",
                "metric": "error_ratio",
                "to": 0.08,
                "at_minutes": 1,
                "shape": "ramp",
                "ramp_minutes": 2,
            },
        ],
        [
            {
                "service": "checkout",
                "level": "ERROR",
                "logger": "com.acme.checkout.PaymentsClient",
                "message": "payment authorization failed: deadline exceeded after 200ms (attempt 1 of 1)",
                "per_minute": 10,
                "stack_trace": DEADLINE_TRACE,
            },
        ],
    ),
    styles={
        "frontend": Style("otel", "service_name"),
        "checkout": Style("otel", "service_name", java=True),
        "payments": Style("otel", "service_name", pool_size=10),
        "cart": Style("otel", "service_name"),
    },
    logs="otel",
    gitops="flux",
    start={
        ("frontend", "prod"): {"tag": "5.0.3"},
        ("checkout", "prod"): {"tag": "1.4.1", "PAYMENTS_TIMEOUT_MS": "2000"},
        ("payments", "prod"): {"tag": "2.2.0"},
        ("cart", "prod"): {"tag": "0.9.8"},
        ("checkout", "staging"): {"tag": "1.5.0-rc.1", "PAYMENTS_TIMEOUT_MS": "2000"},
    },
    changes=(
        Change("payments", -1440 - 90, "payments-team", "payments 2.2.1", {"tag": "2.2.1"}),
        Change("cart", -40, "cart-team", "cart 0.9.9: cache product thumbnails", {"tag": "0.9.9"}),
        Change(
            "checkout",
            -3,
            "ana.p",
            "checkout 1.4.2: fail fast on slow payment authorisations",
            {"tag": "1.4.2", "PAYMENTS_TIMEOUT_MS": "200"},
        ),
    ),
    question="why is checkout failing since {at}?",
    must_name=("1.4.2", "PAYMENTS_TIMEOUT_MS"),
)

MESH = StackSpec(
    name="mesh",
    scenario=_scenario(
        "mesh",
        {
            "storefront": _service(180, 400, ("reviews",)),
            "reviews": _service(90, 120, ("ratings",)),
            "ratings": _service(30, 120),
            "recs": _service(70, 50),
            "legacy": _service(400, 10),
        },
        [],
        [],
    ),
    styles={
        "storefront": Style("nginx", "exported_service"),
        "reviews": Style("istio", "destination_service_name"),
        "ratings": Style("istio", "destination_service_name"),
        "recs": Style("summary", "service"),
        "legacy": Style("micrometer-max", "service"),
    },
)

NPE_TRACE = """java.lang.NullPointerException: Cannot invoke "Rating.stars()" because "rating" is null
\tat com.example.reviews.RatingsClient.merge(RatingsClient.java:112)
\tat com.example.reviews.ReviewsController.list(ReviewsController.java:48)"""

HOLDOUT = StackSpec(
    name="holdout",
    scenario=_scenario(
        "holdout",
        {
            "storefront": _service(220, 300, ("reviews", "recs"), kind="gateway"),
            "reviews": _service(110, 140, ("ratings",)),
            "ratings": _service(35, 140),
            "recs": _service(80, 60),
        },
        [
            {"service": "reviews", "metric": "error_ratio", "to": 0.12, "shape": "ramp", "ramp_minutes": 2},
            {"service": "reviews", "metric": "p99_ms", "to": 650, "shape": "ramp", "ramp_minutes": 2},
            {
                "service": "storefront",
                "metric": "error_ratio",
                "to": 0.05,
                "at_minutes": 1,
                "shape": "ramp",
                "ramp_minutes": 2,
            },
        ],
        [
            {
                "service": "reviews",
                "level": "ERROR",
                "logger": "com.example.reviews.ReviewsController",
                "message": "GET /reviews/$n failed: rating is null",
                "per_minute": 9,
                "stack_trace": NPE_TRACE,
            },
        ],
    ),
    styles={
        "storefront": Style("istio", "destination_service_name"),
        "reviews": Style("istio", "destination_service_name"),
        "ratings": Style("istio", "destination_service_name"),
        "recs": Style("summary", "service"),
    },
    logs="ecs",
    gitops="flux",
    start={
        ("storefront", "prod"): {"tag": "1.12.0"},
        ("reviews", "prod"): {"tag": "3.1.4", "RATINGS_MERGE": "eager"},
        ("ratings", "prod"): {"tag": "2.0.1"},
        ("recs", "prod"): {"tag": "0.7.0"},
    },
    changes=(
        Change("ratings", -1440 - 30, "ratings-team", "ratings 2.0.2", {"tag": "2.0.2"}),
        Change("recs", -35, "recs-team", "recs 0.7.1: warm the model cache", {"tag": "0.7.1"}),
        Change(
            "reviews", -6, "lee.m", "reviews 3.2.0: merge ratings lazily", {"tag": "3.2.0", "RATINGS_MERGE": "lazy"}
        ),
    ),
    question="why is reviews failing since {at}?",
    must_name=("3.2.0",),
)

STACKS = {spec.name: spec for spec in (SHOP, OTEL, MESH, HOLDOUT)}
