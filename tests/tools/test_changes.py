"""find_changes over the real Prometheus, SQLite logs and git: the onset from the metrics, suspects ranked."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bot import wiring
from tests.eval.harness import sandbox_settings
from tools.analysis.ranking import TREND_LOOKBACK, ChangeRanking
from tools.base import call_tool
from tools.timerange import iso_z


def _find(box, tmp_path, around: str = "", **overrides):
    settings = sandbox_settings(box, tmp_path, **overrides)
    box_tools = wiring.build_toolbox(settings, clock=lambda: box.now)  # the sandbox's clock, not the wall's
    service = next(s for s in box.scenario.services if s.name in box.scenario.question.replace("'", " ").split())
    return call_tool(box_tools, "find_changes", {"service": service.name, "around": around or iso_z(box.incident_at)})


def test_the_earlier_deploy_whose_diff_changes_a_setting_ranks_first(make_sandbox, tmp_path):
    result = _find(make_sandbox("two-deploys-earlier"), tmp_path)
    assert result.status == "ok", result.text
    suspects = result.text.split("suspects, best first:", 1)[1]
    assert suspects.index("profile/v3.3.0") < suspects.index("profile/v3.3.1")
    assert "commandTimeout 2000 → 20" in suspects.split("profile/v3.3.1")[0]


def test_a_dependency_that_stopped_serving_has_an_onset_and_its_deploy_is_the_suspect(make_sandbox, tmp_path):
    box = make_sandbox("dependency-pods-down")
    settings = sandbox_settings(box, tmp_path)
    tools = wiring.build_toolbox(settings, clock=lambda: box.now)
    result = call_tool(tools, "find_changes", {"service": "ranker", "around": iso_z(box.incident_at)})
    assert result.status == "ok", result.text  # its traffic fell to ~0 and its latency series stopped: a change
    # the onset is the stop (x0.0) at most run clocks; at some, the error ratio's fall a minute before it comes first
    assert result.text.startswith("onset: ranker ")
    assert "ranker/v4.3.0" in result.text.split("suspects, best first:", 1)[1].splitlines()[1]


def test_a_surge_in_another_caller_and_the_users_time_being_off(make_sandbox, tmp_path):
    box = make_sandbox("batch-job-shared-db")
    said = box.incident_at.replace(minute=(box.incident_at.minute + 30) % 60)
    result = _find(box, tmp_path, around=f"{said:%H:%M}")
    assert result.status == "ok", result.text
    first = result.text.split("suspects, best first:", 1)[1].strip().splitlines()[0]
    assert first.startswith("1. traffic surge in reporting") and "shares orders-db with order" in first
    assert f"you said {said:%H:%M}; the" in result.text


def test_a_deploy_source_that_is_down_is_reported_as_not_run(make_sandbox, tmp_path):
    box = make_sandbox("two-deploys-earlier")
    result = _find(box, tmp_path, deploys={"source": "git", "git_repo": str(tmp_path / "missing")})
    assert "not run: deploys" in result.text
    assert "v3.3.0" not in result.text


def test_with_prometheus_down_no_onset_is_claimed_and_the_failure_is_the_result(make_sandbox, tmp_path):
    box = make_sandbox("two-deploys-earlier")
    result = _find(box, tmp_path, prometheus={"url": "http://127.0.0.1:9", "timeout_s": 1.0})
    assert result.status == "error"
    assert "could not find the onset" in result.text and "not run: " in result.text
    assert "no change point" not in result.text


def test_with_the_log_store_down_new_signatures_are_reported_as_not_run(make_sandbox, tmp_path):
    box = make_sandbox("two-deploys-earlier")
    result = _find(box, tmp_path, logs={"backend": "sqlite", "sqlite_path": str(tmp_path / "missing" / "logs.db")})
    assert result.status == "ok", result.text
    assert "not run: logs of profile" in result.text
    assert "new log signature" not in result.text


SCENARIOS = Path(__file__).with_name("scenarios")


def test_a_hand_run_alter_table_ranks_as_an_event_above_an_earlier_deploy(make_sandbox, tmp_path):
    box = make_sandbox(str(SCENARIOS / "ddl-by-hand-after-deploy.toml"))
    result = _find(box, tmp_path)
    assert result.status == "ok", result.text
    ranking = result.data
    assert isinstance(ranking, ChangeRanking)
    first, *rest = ranking.suspects
    assert first.cause == "event" and first.service == "orders-db" and first.actor == "dba.x"
    assert "ALTER TABLE orders ADD COLUMN gift_note text" in first.what
    deploy = next(s for s in rest if s.cause == "deploy")
    assert deploy.version == "v2.4.1" and deploy.score < first.score
    assert ranking.onset is not None and first.at is not None
    assert timedelta(0) < ranking.onset.at - first.at <= timedelta(minutes=5)
    lines = result.text.split("suspects, best first:", 1)[1].strip().splitlines()
    assert lines[0].startswith("1. event ddl on orders-db at ") and " by dba.x" in lines[0]
    assert "just before the onset" in lines[0] and "can explain latency" in lines[0]
    # the lines that wait behind the statement are its effect, not another event
    assert not any("blocked by ALTER TABLE" in s.what for s in ranking.suspects)


def test_a_manual_psql_session_is_an_event_with_its_user(make_sandbox, tmp_path):
    result = _find(make_sandbox(str(SCENARIOS / "ddl-by-hand-after-deploy.toml")), tmp_path)
    session = next(s for s in result.data.suspects if "connection authorized" in s.what)
    assert session.cause == "event" and session.actor == "dba.x" and session.what.startswith("event db session")


def test_a_memory_only_incident_has_an_onset_from_memory(make_sandbox, tmp_path):
    box = make_sandbox(str(SCENARIOS / "memory-only-oom.toml"))
    result = _find(box, tmp_path)
    assert result.status == "ok", result.text
    ranking = result.data
    assert ranking.onset is not None
    assert ranking.onset.signal in ("memory", "restarts")
    assert abs(ranking.onset.at - box.incident_at) <= timedelta(minutes=3)
    assert ranking.lookback == TREND_LOOKBACK  # memory and restarts changed: hours, not minutes
    assert "the golden signals show no change" in result.text.splitlines()[0]


def test_a_node_drain_in_the_kubernetes_events_ranks_as_an_event(make_sandbox, tmp_path):
    box = make_sandbox("freight-quote-latency")
    settings = sandbox_settings(box, tmp_path, toolsets=True)  # the Kubernetes stand-in, as opsbot eval runs it
    tools = wiring.build_toolbox(settings, clock=lambda: box.now)
    result = call_tool(tools, "find_changes", {"service": "broker-gateway", "around": iso_z(box.incident_at)})
    assert result.status == "ok", result.text
    ranking = result.data
    assert isinstance(ranking, ChangeRanking)
    drain = next(s for s in ranking.suspects if s.cause == "event" and s.what.startswith("event drain on node-3"))
    assert drain is ranking.suspects[0]
    assert drain.at is not None and abs(drain.at - box.incident_at) <= timedelta(minutes=2)


def test_a_cap_lowered_the_day_before_is_a_suspect_that_says_it_can_wait(make_sandbox, tmp_path):
    """The HPA's max lowered 25 h before the daily load met it: far outside a step's 45 minutes, yet a suspect."""
    box = make_sandbox("examples/hpa-cap-daily-peak")
    result = _find(box, tmp_path)
    ranked = result.data
    assert isinstance(ranked, ChangeRanking), result.text
    late = [s for s in ranked.suspects if s.version == "v4.2.0-config.1"]
    assert late and late[0].service == "checkout-api", result.text
    assert any(
        "hours before the onset" in r.text and "bites only when load meets it" in r.text for r in late[0].reasons
    )
    assert late[0].at is not None and ranked.onset is not None and ranked.onset.at - late[0].at > timedelta(hours=20)


def test_an_incident_seen_only_in_4xx_has_an_onset_from_the_4xx_share(make_sandbox, tmp_path):
    """401s from a clock skew: latency, 5xx and traffic stay flat, the 4xx share does not."""
    box = make_sandbox("examples/clock-skew-401")
    result = _find(box, tmp_path)
    ranked = result.data
    assert isinstance(ranked, ChangeRanking) and ranked.onset is not None, result.text
    assert ranked.onset.signal == "client_errors", result.text
    assert abs(ranked.onset.at - box.incident_at) <= timedelta(minutes=5), result.text
