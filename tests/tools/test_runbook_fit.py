"""search_runbooks scores each section by how much of the search it holds, and says "no good match" when no section
reaches the threshold: a question that shares only common words with the runbooks gets no runbook to follow."""

from __future__ import annotations

from pathlib import Path

from tools.base import Toolbox, call_tool
from tools.results import runbooks_of
from tools.runbooks.citations import missing_tools, tools_named
from tools.runbooks.search import Runbooks

SANDBOX_RUNBOOKS = Path(__file__).resolve().parents[2] / "bot" / "sandbox" / "runbooks"


def search(query: str, service: str = "", min_score: float = 0.3) -> tuple[str, str, Runbooks]:
    books = Runbooks(SANDBOX_RUNBOOKS, min_score=min_score)
    result = call_tool(Toolbox(books.specs()), "search_runbooks", {"query": query, "service": service})
    return result.status, result.text, books


def test_the_section_holding_the_error_signature_scores_highest_and_shows_its_score() -> None:
    status, text, books = search("HikariPool-1 - Connection is not available, request timed out", "order")
    hits = books.search("HikariPool-1 - Connection is not available, request timed out", "order")
    assert status == "ok"
    assert hits[0].citation == "Runbook: order-latency.md § Connection pool" and hits[0].score == 1.0
    assert all(h.score < 0.3 for h in hits[1:])
    assert text.splitlines()[1] == "1. Runbook: order-latency.md § Connection pool (score 1.00)"
    assert "1 more section scored below 0.30: not shown" in text


def test_a_question_sharing_only_common_words_is_no_good_match() -> None:
    status, text, books = search("why is checkout slow after lunch", "checkout")
    assert status == "no_data"
    assert text.startswith("no good match for 'why is checkout slow after lunch' for checkout")
    assert "(score 0.15)" in text
    found = books.search("why is checkout slow after lunch", "checkout")
    assert found and all(h.score < 0.3 for h in found)


def test_the_threshold_is_a_setting_and_the_data_keeps_every_hit_with_its_score() -> None:
    books = Runbooks(SANDBOX_RUNBOOKS, min_score=0.1)
    result = call_tool(Toolbox(books.specs()), "search_runbooks", {"query": "why is checkout slow after lunch"})
    found = runbooks_of(result)
    assert result.status == "ok" and found is not None
    assert found.min_score == 0.1 and found.good_hits == found.hits
    assert [h.score for h in found.hits] == sorted((h.score for h in found.hits), reverse=True)


def test_a_runbooks_tool_citations_are_read_and_the_missing_ones_named() -> None:
    text = (SANDBOX_RUNBOOKS / "pod-oomkilled.md").read_text()
    assert tools_named(text) == ["query_pods", "query_k8s_events"]
    assert tools_named("see docs/query_pods.md and run `query_logs`; calculate it") == ["query_logs"]
    files = {"a.md": "`query_pods` then `query_logs`", "b.md": "`query_metrics`"}
    assert missing_tools(files, {"query_logs", "query_metrics"}) == {"a.md": ["query_pods"]}
