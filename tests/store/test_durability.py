"""What keeps a trace store usable across crashes and restarts: partial traces, retention (a fresh file opened by
several processes at once: test_fresh_open.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.store.base import TraceStore, interrupted_from_partial, is_partial
from tests.store.known_traces import make_trace, step
from tests.tools.result_samples import log_summary
from tools.results import signatures_of


def test_steps_appended_one_by_one_form_a_partial_trace(store: TraceStore) -> None:
    store.append_step("run1", "why is order slow?")
    stub = store.get("run1")
    assert stub is not None and is_partial(stub) and stub.steps == () and stub.question == "why is order slow?"
    store.append_step("run1", "why is order slow?", step(1, "query_metrics"))
    store.append_step("run1", "why is order slow?", step(2, "query_logs"))
    partial = store.get("run1")
    assert partial is not None and is_partial(partial) and not partial.complete
    assert [s.action for s in partial.steps] == ["query_metrics", "query_logs"]
    assert partial.totals.steps == 2 and partial.answer == ""


def test_a_takeover_reads_the_dead_attempts_steps_with_their_data(store: TraceStore) -> None:
    kept = replace(step(1, "query_logs"), data=log_summary())
    store.append_step("run2", "why is order slow?", kept)
    partial = store.get("run2")
    assert partial is not None and is_partial(partial)
    closed = interrupted_from_partial(partial, "interrupted")
    [error] = signatures_of(closed.steps[0])
    assert closed.steps == (kept,) and error.count == 256


def test_a_final_save_replaces_the_partial_trace_and_late_steps_do_not_undo_it(store: TraceStore) -> None:
    store.append_step("t9", "q", step(1, "query_metrics"))
    final = make_trace("t9", "2026-11-28T10:00:00Z", [step(1, "query_metrics"), step(2, "finish")])
    store.save(final)
    store.append_step("t9", "q", step(3, "query_logs"))
    kept = store.get("t9")
    assert kept is not None and not is_partial(kept) and len(kept.steps) == 2


def test_retention_deletes_only_traces_older_than_the_cutoff(store: TraceStore) -> None:
    store.save(make_trace("old", "2026-01-01T00:00:00Z", [step(1, "query_metrics")]))
    store.save(make_trace("new", "2026-11-28T00:00:00Z", [step(1, "query_metrics")]))
    assert store.delete_older_than(datetime(2026, 6, 1, tzinfo=UTC)) == 1
    assert store.get("old") is None and store.get("new") is not None
    assert store.search("order") == [store.get("new")]
