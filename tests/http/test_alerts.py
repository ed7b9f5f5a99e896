from __future__ import annotations

from bot.http.alerts import AlertGroup, TtlDedupe, dedupe_key, question_from_alerts
from tests.http.payloads import alert_group


def group(**kw: object) -> AlertGroup:
    return AlertGroup.model_validate(alert_group(**kw))  # type: ignore[arg-type]


def test_question_names_alert_service_summary_description_and_start() -> None:
    text = question_from_alerts(group())
    assert text.startswith("Alertmanager: OrderLatencyHigh is firing for service order since 2026-11-28T15:07:00Z.")
    assert "- order p99 above 1 s p99 is 1.18 s (fp1)" in text
    assert text.endswith("What is the root cause?")


def test_many_alerts_are_summarised_not_listed() -> None:
    text = question_from_alerts(group(fingerprints=tuple(f"fp{i}" for i in range(8))))
    assert text.count("\n- ") == 6 and "and 3 more alerts" in text


def test_dedupe_key_ignores_order_and_changes_with_a_new_alert() -> None:
    assert dedupe_key(group(fingerprints=("a", "b"))) == dedupe_key(group(fingerprints=("b", "a")))
    assert dedupe_key(group(fingerprints=("a",))) != dedupe_key(group(fingerprints=("a", "b")))


def test_alert_without_fingerprint_is_identified_by_its_labels() -> None:
    body = alert_group()
    body["alerts"][0]["fingerprint"] = ""
    assert dedupe_key(AlertGroup.model_validate(body)) == dedupe_key(AlertGroup.model_validate(body))


def test_ttl_dedupe_lets_a_key_run_again_after_it_expires_or_is_forgotten() -> None:
    now = [0.0]
    dedupe = TtlDedupe(ttl_s=60, clock=lambda: now[0])
    assert dedupe.first_time("k") and not dedupe.first_time("k")
    now[0] = 61
    assert dedupe.first_time("k")
    dedupe.forget("k")
    assert dedupe.first_time("k")
