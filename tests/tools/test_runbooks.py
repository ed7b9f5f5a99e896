"""search_runbooks through call_tool: Markdown sections from a folder or a git repository, FTS5-ranked, cited."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tools.base import Toolbox, call_tool
from tools.runbooks.search import Runbooks, sections_from_markdown
from tools.toolset import Toolset

SANDBOX_RUNBOOKS = Path(__file__).resolve().parents[2] / "bot" / "sandbox" / "runbooks"


def box(path: Path, **options: object) -> Toolbox:
    return Toolbox(Runbooks(path, **options).specs())  # type: ignore[arg-type]


def test_the_error_signature_finds_the_section_that_explains_it() -> None:
    result = call_tool(
        box(SANDBOX_RUNBOOKS),
        "search_runbooks",
        {"query": "HikariPool-1 - Connection is not available, request timed out", "service": "order"},
    )
    assert result.status == "ok"
    assert result.text.splitlines()[1] == "1. Runbook: order-latency.md § Connection pool (score 1.00)"
    assert "pods × pool size must stay below orders-db's" in result.text


def test_stopwords_do_not_use_up_the_term_cap_before_the_telling_word() -> None:
    # 15 stopwords, then the one word that matters: the cap of 12 terms applies after the stopwords are gone
    query = "it is not that the of was in for an so what when where which HikariPool"
    result = call_tool(box(SANDBOX_RUNBOOKS), "search_runbooks", {"query": query, "service": "order"})
    assert result.status == "ok" and "1. Runbook: order-latency.md § Connection pool" in result.text


def test_a_service_filter_keeps_runbooks_for_every_service_and_drops_others() -> None:
    result = call_tool(box(SANDBOX_RUNBOOKS), "search_runbooks", {"query": "OOMKilled exit 137", "service": "order"})
    assert "Runbook: pod-oomkilled.md" in result.text
    other = call_tool(box(SANDBOX_RUNBOOKS), "search_runbooks", {"query": "card processor", "service": "order"})
    assert other.status == "no_data" and "sections searched" in other.text


def test_fts_syntax_in_the_query_is_plain_text() -> None:
    result = call_tool(box(SANDBOX_RUNBOOKS), "search_runbooks", {"query": 'NEAR(crash "loop) AND * OR -'})
    assert result.status in ("ok", "no_data")
    assert "failed" not in result.text


def test_output_is_capped_per_section_and_in_number(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_text(
        "# Big\n\n" + "".join(f"## Disk {i}\ndisk full " + "x " * 900 + "\n" for i in range(6))
    )
    result = call_tool(box(tmp_path, max_results=2, max_section_chars=100), "search_runbooks", {"query": "disk full"})
    assert result.text.count("Runbook: big.md §") == 2 and result.text.count(" …") == 2


def test_runbooks_are_read_from_a_git_repository_at_a_ref(tmp_path: Path) -> None:
    repo = tmp_path / "runbooks"
    shutil.copytree(SANDBOX_RUNBOOKS, repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "runbooks"], check=True)
    (repo / "uncommitted.md").write_text("# Draft\n\n## Kafka lag\nconsumer lag grows\n")
    books = Runbooks(repo)
    assert call_tool(Toolbox(books.specs()), "search_runbooks", {"query": "consumer lag"}).status == "no_data"
    assert books.check() == f"4 runbooks, 13 sections from {repo}"


def test_check_warns_on_an_empty_folder_and_fails_on_a_missing_one(tmp_path: Path) -> None:
    def state(path: Path) -> str:
        books = Runbooks(path)
        return Toolset("runbooks", True, books.specs, books.check).check().state

    assert state(SANDBOX_RUNBOOKS) == "ok"
    assert state(tmp_path) == "warn"
    assert state(tmp_path / "missing") == "fail"


def test_sections_follow_headings_and_front_matter_names_services() -> None:
    text = "---\nservices: [order, payment]\n---\n# Title\nintro\n## A\nbody a\n### B\nbody b\n"
    sections = sections_from_markdown("x.md", text)
    assert [(s.heading, s.body) for s in sections] == [("Title", "intro"), ("A", "body a"), ("B", "body b")]
    assert sections[0].services == ("order", "payment")
    assert sections[1].citation == "Runbook: x.md § A"
