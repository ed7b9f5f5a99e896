"""Redaction table: every secret shape becomes [REDACTED:<kind>], the text around it stays readable."""

from __future__ import annotations

import re

import pytest

from bot.engine.types import Step, StopReason, Totals, Trace
from bot.safety.redact import _ASSIGNMENT, _ASSIGNMENT_ANCHORS, _RULES, redact, redact_trace, redact_value
from tools.base import Toolbox, call_tool, tool

GH = "ghp_" + "a1B2c3D4e5" * 4
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nq9XhN0\n-----END RSA PRIVATE KEY-----"
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

# (shape, text, expected after redaction)
SECRETS: list[tuple[str, str, str]] = [
    (
        "aws_access_key_id",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_access_key_id = [REDACTED:aws_access_key_id]",
    ),
    (
        "aws_secret_key",
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key=[REDACTED:aws_secret_key]",
    ),
    ("github_ghp", f"cloning with {GH} failed", "cloning with [REDACTED:github_token] failed"),
    ("github_gho", "oauth gho_" + "Z9" * 18, "oauth [REDACTED:github_token]"),
    ("github_pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED:github_token]"),
    (
        "slack_bot_token",
        "SLACK_BOT_TOKEN xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "SLACK_BOT_TOKEN [REDACTED:slack_token]",
    ),
    ("slack_user_token", "using xoxp-1234-5678-90ab-cdefabcdef", "using [REDACTED:slack_token]"),
    ("slack_app_token", "app token xapp-1-A0123456789-1234567890123-abcdef0123", "app token [REDACTED:slack_token]"),
    (
        "slack_webhook",
        "POST https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXX ok",
        "POST https://hooks.slack.com/[REDACTED:slack_webhook] ok",
    ),
    ("openai_legacy", "key sk-" + "A1b2C3d4" * 6, "key [REDACTED:openai_key]"),
    ("openai_project", "OPENAI_API_KEY=sk-proj-" + "Ab1_" * 20, "OPENAI_API_KEY=[REDACTED:openai_key]"),
    ("anthropic", "x-api-key sk-ant-api03-" + "Qw3_" * 20, "x-api-key [REDACTED:anthropic_key]"),
    ("google_api_key", "maps AIzaSyD-abcdefghijklmnopqrstuvwxyz12345 end", "maps [REDACTED:google_api_key] end"),
    ("stripe_secret", "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe [REDACTED:stripe_key]"),
    ("stripe_restricted", "rk_test_abcdefghijklmnop1234", "[REDACTED:stripe_key]"),
    ("bearer_header", "Authorization: Bearer abcdef0123456789abcdef", "Authorization: Bearer [REDACTED:bearer_token]"),
    ("bearer_jwt", f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:jwt]"),
    ("basic_auth", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED:basic_auth]"),
    ("password_query", "login password=hunter2 user=app", "login password=[REDACTED:password] user=app"),
    ("password_json", '{"user": "app", "password": "hunter2"}', '{"user": "app", "password": "[REDACTED:password]"}'),
    ("password_yaml", "DB_PASSWORD: s3cr3t!", "DB_PASSWORD: [REDACTED:password]"),
    ("private_key_pem", f"key:\n{PEM}\nloaded", "key:\n[REDACTED:private_key]\nloaded"),
    (
        "private_key_truncated",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn...[cut 4,000 chars]",
        "[REDACTED:private_key]",
    ),
    (
        "postgres_url",
        "dsn postgres://order:Sup3rS3cret@db.internal:5432/orders",
        "dsn postgres://order:[REDACTED:password]@db.internal:5432/orders",
    ),
    ("mysql_url", "mysql://root:pw@10.0.0.5/app", "mysql://root:[REDACTED:password]@10.0.0.5/app"),
    (
        "mongodb_srv",
        "mongodb+srv://admin:p%40ss@cluster0.mongodb.net/x",
        "mongodb+srv://admin:[REDACTED:password]@cluster0.mongodb.net/x",
    ),
    ("unencoded_at_in_password", "postgres://app:p@ss@db:5432/x", "postgres://app:[REDACTED:password]@db:5432/x"),
    ("redis_password_only", "redis://:redispass@cache:6379/0", "redis://:[REDACTED:password]@cache:6379/0"),
    ("amqp_url", "amqp://guest:guest@mq:5672/", "amqp://guest:[REDACTED:password]@mq:5672/"),
    (
        "jdbc_sqlserver",
        "jdbc:sqlserver://db:1433;user=sa;password=Secret123;encrypt=true",
        "jdbc:sqlserver://db:1433;user=sa;password=[REDACTED:password];encrypt=true",
    ),
    (
        "jdbc_query",
        "jdbc:postgresql://db/orders?user=app&password=Secret123&ssl=true",
        "jdbc:postgresql://db/orders?user=app&password=[REDACTED:password]&ssl=true",
    ),
    ("jwt_alone", f"session {JWT}", "session [REDACTED:jwt]"),
    (
        "azure_storage",
        f"AccountName=acct;AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
        "AccountName=acct;AccountKey=[REDACTED:azure_storage_key];EndpointSuffix=core.windows.net",
    ),
    (
        "azure_sas",
        "https://a.blob.core.windows.net/c?sv=2021&sig=abcdefghijklmnopqrstuvwxyz0123%2B&se=2026",
        "https://a.blob.core.windows.net/c?sv=2021&sig=[REDACTED:azure_sas]&se=2026",
    ),
    (
        "gcp_service_account",
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQ\\n'
        '-----END PRIVATE KEY-----\\n", "client_email": "bot@p.iam.gserviceaccount.com"}',
        '{"type": "service_account", "private_key": "[REDACTED:private_key]", '
        '"client_email": "bot@p.iam.gserviceaccount.com"}',
    ),
    (
        "gcp_private_key_field_plain",
        '"private_key": "MIIEvQIBADANBgkqhkiG9w0B"',
        '"private_key": "[REDACTED:private_key]"',
    ),
    (
        "generic_assignments",
        "api_key=abcd1234 token=zzz9 secret=shh client_secret: 'abc'",
        "api_key=[REDACTED:api_key] token=[REDACTED:token] secret=[REDACTED:secret] client_secret: '[REDACTED:secret]'",
    ),
    (
        "secret_key_and_passphrase",
        "SECRET_KEY=django-insecure-abc123 signing_key: k1 ssh passphrase=open-sesame",
        "SECRET_KEY=[REDACTED:secret] signing_key: [REDACTED:secret] ssh passphrase=[REDACTED:secret]",
    ),
    ("url_query_token", "GET /cb?access_token=qT0k3n-abc&state=1", "GET /cb?access_token=[REDACTED:token]&state=1"),
    (
        "quoted_env_value_with_spaces",
        'export DB_PASSWORD="correct horse battery"',
        'export DB_PASSWORD="[REDACTED:password]"',
    ),
    (
        "glued_to_chinese_text",
        f"密钥AKIAIOSFODNN7EXAMPLE，令牌{GH}。",
        "密钥[REDACTED:aws_access_key_id]，令牌[REDACTED:github_token]。",
    ),
    ("api_key_header", "X-Api-Key: 0123456789abcdef", "X-Api-Key: [REDACTED:api_key]"),
    (
        "npm_token",
        "//registry.npmjs.org/:_authToken=npm_" + "a1" * 18,
        "//registry.npmjs.org/:_authToken=[REDACTED:npm_token]",
    ),
    ("gitlab_token", "glpat-abcdefghij0123456789", "[REDACTED:gitlab_token]"),
    ("sendgrid_key", "SG." + "a" * 22 + "." + "b" * 43, "[REDACTED:sendgrid_key]"),
]

# Text that looks technical but holds no secret: it must come back unchanged.
NOT_SECRETS: list[tuple[str, str]] = [
    ("trace_id", "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7"),
    ("git_sha", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (order/v2.8.1)"),
    ("short_sha", "deployed 9fceb02 at 15:02"),
    ("uuid", "request 123e4567-e89b-12d3-a456-426614174000 failed"),
    ("token_counters", "max_tokens: 800, prompt_tokens=1234, token_budget=32000"),
    ("mysql_using_password_flag", "Access denied for user 'app'@'10.0.0.1' (using password: YES)"),
    ("password_auth_failure_log", 'FATAL:  password authentication failed for user "order"'),
    ("template_reference", "password: ${DB_PASSWORD}"),
    ("masked_value", "password: ******"),
    ("url_without_credentials", "GET https://api.example.com:8443/v1/orders?limit=10"),
    ("email_address", "paged oncall@example.com at 15:07"),
    ("metric_line", "change: 15:05 212 ms -> 1,180 ms (x5.6)"),
    ("hikari_config", "hikari.maximumPoolSize: 50 -> 200, connectionTimeout: 30000"),
    ("prose_about_tokens", "the token bucket refills at 100 tokens per second"),
    ("disk_name", "disk-sk-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa is full"),
    ("cache_and_partition_keys", "cache_key=order:123 partition_key: tenant routing_key=orders.created"),
    ("empty", ""),
]


@pytest.mark.parametrize(("text", "expected"), [s[1:] for s in SECRETS], ids=[s[0] for s in SECRETS])
def test_secret_shapes_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize("text", [n[1] for n in NOT_SECRETS], ids=[n[0] for n in NOT_SECRETS])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_every_match_of_a_rule_holds_one_of_the_anchors_it_is_skipped_without() -> None:
    """A rule's scan is skipped when the text holds none of its anchors: sound only if no match can lack them."""
    from tests.safety.hostile_corpus import CASES
    from tests.safety.secret_shapes import SECRETS as PLANTED

    texts = [t for _, t, _ in SECRETS] + [t for _, t in NOT_SECRETS] + [line for _, line in PLANTED.values()]
    texts += [case.text for case in CASES] + ["hub login hf_" + "abcdefghij" * 3 + "abcd"]
    rules = [(r.kind, r.pattern, r.anchors) for r in _RULES] + [("assignment", _ASSIGNMENT, _ASSIGNMENT_ANCHORS)]
    matched = set()
    for kind, pattern, anchors in rules:
        for match in (m for text in texts for m in pattern.finditer(text)):
            found = match[0].lower() if pattern.flags & re.IGNORECASE else match[0]
            assert any(anchor in found for anchor in anchors), (kind, match[0])
            matched.add(kind)
    assert len(matched) == len(rules)  # the corpus has a match for every rule: the check is not vacuous


def test_redaction_is_idempotent() -> None:
    once = redact(" ".join(text for _, text, _ in SECRETS))
    assert redact(once) == once


def test_redact_value_walks_nested_arguments() -> None:
    args = {"query": f"token={GH}", "filters": [{"dsn": "postgres://a:b@h/d"}], "limit": 5}
    assert redact_value(args) == {
        "query": "token=[REDACTED:github_token]",
        "filters": [{"dsn": "postgres://a:[REDACTED:password]@h/d"}],
        "limit": 5,
    }


def test_redact_trace_covers_question_thoughts_args_observations_answer_and_notes() -> None:
    step = Step(1, f"try {GH}", "query_logs", {"query": "password=hunter2"}, f"Authorization: Bearer {JWT}", "ok")
    trace = Trace(
        trace_id="t1",
        question="why does postgres://app:pw1@db/x fail?",
        protocol="text",
        steps=(step,),
        answer="rotate AKIAIOSFODNN7EXAMPLE",
        complete=True,
        stop_reason=StopReason.FINISH,
        totals=Totals(steps=1),
        notes=("seen xoxb-123456789012-abcdefghijkl",),
    )
    clean = redact_trace(trace)
    assert clean.question == "why does postgres://app:[REDACTED:password]@db/x fail?"
    assert clean.steps[0].thought == "try [REDACTED:github_token]"
    assert clean.steps[0].args == {"query": "password=[REDACTED:password]"}
    assert clean.steps[0].observation == "Authorization: Bearer [REDACTED:jwt]"
    assert clean.answer == "rotate [REDACTED:aws_access_key_id]"
    assert clean.notes == ("seen [REDACTED:slack_token]",)
    assert (clean.trace_id, clean.totals, clean.steps[0].status) == ("t1", trace.totals, "ok")


def test_toolbox_hook_redacts_observations_before_the_model_sees_them() -> None:
    def read_config(service: str) -> str:
        """Return a config file (test only)."""
        return f"url: postgres://{service}:Sup3r@db:5432/app\napi_key: abc123def"

    result = call_tool(Toolbox([tool(read_config)], redact=redact), "read_config", {"service": "order"})
    assert result.text == "url: postgres://order:[REDACTED:password]@db:5432/app\napi_key: [REDACTED:api_key]"
