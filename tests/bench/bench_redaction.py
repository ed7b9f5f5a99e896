"""Redaction passes per question: how often one diagnosis runs the redaction rules, and who asked for each pass.

One question goes the way a served Slack mention goes: the event through Slack's intake (the inbound pass), the
responder built by wiring over the default sandbox's real backends (Prometheus, SQLite logs, git deploys) with the
ScriptedLLM replaying a 7-step hikari-pool investigation and its answer, the run delivered in its thread by the
Slack runner wiring builds (live task cards, the final message, the trace kept in the SQLite store, its steps
kept as they complete, as `opsbot serve` keeps them). Every call of the redaction function on any thread is
counted (a profile hook, nothing replaced), with the characters it was handed and the first caller outside the
redaction and outbound modules (who asked). A pass answered from a memo of earlier outputs counts as a pass; the
work the rules did is counted apart: each pattern scan of a text inside a pass, and the characters it scanned.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_redaction.py -s
Prints numbers; asserts no timing.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import bot.safety.redact as redaction
from bot import wiring
from bot.engine.types import Trace
from tests.bench.workload import ANSWER, sandbox_investigation
from tests.eval.harness import sandbox_settings
from tests.fakes.backends import RunningSandbox
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack import BOT_TOKEN, BOT_USER_ID, SIGNING_SECRET, FakeSlackAPI, mention_event

try:  # the Slack package's layout differs between commits; the bench runs on either
    from bot.slack.intake.events import question_from_event
    from bot.slack.jobs.state import Job
except ImportError:  # pragma: no cover - the flat layout
    from bot.slack.events import question_from_event  # type: ignore[no-redef]
    from bot.slack.state import Job  # type: ignore[no-redef]

QUIET = ("bot/safety/redact.py", "bot/safety/outbound.py", "bot/wiring/basics.py", "functools")


@dataclass
class Passes:
    """Calls of `redact` (by caller), the characters they were handed, and the rules' full scans."""

    calls: Counter[str] = field(default_factory=Counter)
    chars: Counter[str] = field(default_factory=Counter)
    scans: int = 0  # pattern scans (one rule over one text)
    scanned_chars: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is redaction.redact.__code__:
            caller, text = _caller(frame), frame.f_locals.get("text") or ""
            with self.lock:
                self.calls[caller] += 1
                self.chars[caller] += len(text)
        elif event == "c_call" and frame.f_code is redaction.redact.__code__ and _is_scan(arg):
            with self.lock:
                self.scans += 1
                self.scanned_chars += len(frame.f_locals.get("text") or "")


def _is_scan(function: Any) -> bool:
    """A compiled pattern's sub or subn: one rule scanning the text (a memo hit returns before any)."""
    return isinstance(getattr(function, "__self__", None), re.Pattern) and function.__name__ in ("sub", "subn")


def _caller(frame: FrameType) -> str:
    """The first frame outside the redaction and outbound modules: the module and function that asked."""
    current: FrameType | None = frame
    while current is not None and any(part in current.f_code.co_filename for part in QUIET):
        current = current.f_back
    if current is None:
        return "?"
    path = current.f_code.co_filename
    for root in ("/bot/", "/tools/", "/tests/"):
        if root in path:
            path = root.strip("/") + "/" + path.split(root, 1)[1]
            break
    return f"{path}:{current.f_code.co_name}"


@contextmanager
def counting(passes: Passes) -> Iterator[None]:
    """The hook on this thread and on every thread started inside the block."""
    sys.setprofile(passes.hook)
    threading.setprofile(passes.hook)
    try:
        yield
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def one_slack_diagnosis(box: RunningSandbox, state: Path, scripted: ScriptedLLM, fake: FakeSlackAPI) -> Trace:
    """A mention, answered in its thread by the Slack runner over the real responder, stored as serve stores it."""
    for thought, action, args in sandbox_investigation(box.incident_at):
        scripted.script({"content": thought, "tool_calls": [{"name": action, "arguments": args}]})
    scripted.script({"content": f"Final Answer: {ANSWER}"})
    slack = {"bot_token": BOT_TOKEN, "signing_secret": SIGNING_SECRET, "api_base_url": fake.base_url}
    settings = sandbox_settings(box, state, llm_base_url=scripted.base_url, slack=slack)
    responder = wiring.build_responder(settings)
    store = wiring.build_store(settings)
    surface = wiring.build_slack_app(
        settings, responder, persist=store.save, fetch_trace=store.get, classify=responder.classify, keep_steps=store
    )
    event = mention_event(box.scenario.question, ts="1700000000.000100", channel="C1")
    question = question_from_event(event, bot_user_id=BOT_USER_ID)
    assert question is not None
    job = Job(question, "C1", question.thread_ts, "1700000000.000100", question.user)
    try:
        return surface.runner.run(job)
    finally:
        surface.runner.stop(timeout_s=1.0)
        store.close()


def test_redaction_passes_per_question(
    sandbox: RunningSandbox, scripted_llm: ScriptedLLM, fake_slack: FakeSlackAPI, tmp_path: Path
) -> None:
    passes = Passes()
    redaction.redact("warm-up: password=hunter2")  # compile the rules outside the count
    started = time.process_time()
    with counting(passes):
        trace = one_slack_diagnosis(sandbox, tmp_path, scripted_llm, fake_slack)
    cpu_ms = (time.process_time() - started) * 1000
    assert trace.complete and len(trace.steps) == 8, (trace.stop_reason, trace.notes)
    total, chars = sum(passes.calls.values()), sum(passes.chars.values())
    slack_calls = len(fake_slack.calls)
    print(f"\none Slack diagnosis ({len(trace.steps)} steps, {slack_calls} Slack calls), counted on every thread")
    print(f"redaction passes per question: {total:,} ({chars:,} characters handed in)")
    print(f"pattern scans inside them: {passes.scans:,} ({passes.scanned_chars:,} characters scanned)")
    print(f"{'calls':>6} {'chars':>9}  caller")
    for caller, calls in passes.calls.most_common():
        print(f"{calls:6,} {passes.chars[caller]:9,}  {caller}")
    print(f"(process CPU for the whole delivery under the profile hook: {cpu_ms:.0f} ms; the hook slows it)")
