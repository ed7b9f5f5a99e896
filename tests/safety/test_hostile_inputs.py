"""Every hostile input through every entry point: opsbot stays up, pings nobody, leaks nothing, runs nothing.

The corpus (tests/safety/hostile_corpus.py) goes through @mention, /diagnose, DM, POST /api/diagnose, the
Alertmanager webhook and `opsbot diagnose`, served as `opsbot serve` serves them, over the default sandbox, with
the ScriptedLLM playing a compromised model. Each (input, entry point) pair checks the invariants:
no crash (the surface answers), the next message is still answered (the next pair, and the last test),
nothing broadcast, no secret anywhere (Slack, API, store, the model, the CLI), no invalid backend query, nothing
executed, no model call for an input without a request, no echo of an oversized input.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llm import ScriptedLLM
from tests.safety.hostile_corpus import CASES, Hostile
from tests.safety.hostile_entry import CANARY, ENTRY_POINTS, Outcome
from tests.safety.hostile_stack import Stack, build_stack, compromised_reply, invalid_backend_calls

MODEL_SECRET = "AKIAIOSFODNN7EXAMPLE"  # the compromised model puts it in every answer
# Live Slack syntax no output may carry: pings, group pings, spoofed links, HTML.
PINGS = ("<!channel", "<!here", "<!everyone", "<!subteam", "<@U0", "<https://evil")
MARKUP = ("<script", "<img")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


@pytest.fixture(scope="module")
def stack(
    sandbox: Any,
    scripted_llm_server: ScriptedLLM,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    scripted_llm_server.reset()
    scripted_llm_server.responder = compromised_reply
    served = build_stack(sandbox, tmp_path_factory.mktemp("hostile"), scripted_llm_server)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(served.store_path.parent)  # the CLI reads no developer .env
        for name in [n for n in __import__("os").environ if n.startswith(("OPSBOT_", "OPENAI_"))]:
            patch.delenv(name)
        yield served
    served.stop()
    scripted_llm_server.reset()


def stored_text(stack: Stack) -> str:
    """Everything the trace store holds, raw (database and write-ahead log)."""
    paths = [stack.store_path, Path(f"{stack.store_path}-wal")]
    return "".join(p.read_bytes().decode("utf-8", "replace") for p in paths if p.exists())


def violations(stack: Stack, case: Hostile, entry: str, outcome: Outcome) -> list[str]:
    """Every invariant the outcome breaks (empty when it holds them all)."""
    found = ([] if outcome.answered else [f"not answered: {outcome.problem}"]) + outcome.flagged
    out, api = "\n".join(outcome.outbound), "\n".join(outcome.api)
    if entry != "cli":  # the terminal is not a chat: pings mean nothing there, control characters do
        found += [f"live {token!r} posted" for token in PINGS if token in out]
        found += [f"markup {token!r} posted" for token in MARKUP if token in out]
        found += [f"live {token!r} in the API's JSON" for token in PINGS if token in api]
    found += ["control or invisible character in the output"] if _CONTROL.search(out + api) else []
    secrets = (*case.secrets, MODEL_SECRET)
    everywhere = "\n".join([out, api, *outcome.llm_requests, stored_text(stack)])
    found += [f"secret {s[:12]}… leaked" for s in secrets if s in everywhere]
    found += invalid_backend_calls(stack, outcome.backend_calls)
    found += ["a command was executed"] if stack.marker.exists() else []
    if case.empty and entry != "webhook" and outcome.llm_requests:  # an alert always names what fires
        found.append(f"{len(outcome.llm_requests)} model calls for an input without a request")
    if case.oversized:
        tail = case.text[-300:]
        found += ["the oversized input was echoed"] if tail in everywhere else []
        found += [f"an anchor quotes {len(a)} chars" for a in outcome.anchors if len(a) > 600]
    return found


def _with_marker(case: Hostile, stack: Stack) -> str:
    return case.text.replace("{marker}", str(stack.marker))


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("case", CASES, ids=[f"{c.group}-{c.name}" for c in CASES])
def test_hostile_input_is_handled_safely(stack: Stack, case: Hostile, entry: str) -> None:
    outcome = ENTRY_POINTS[entry](stack, _with_marker(case, stack))
    assert violations(stack, case, entry, outcome) == []


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_entry_point_still_answers_after_the_corpus(stack: Stack, entry: str) -> None:
    outcome = ENTRY_POINTS[entry](stack, CANARY)
    assert outcome.answered, outcome.problem
    assert outcome.llm_requests, "a real question reaches the model"
    assert "You asked" in "\n".join(outcome.outbound + outcome.api)
