"""One limit on LLM calls in flight, shared by every surface that holds the same LimitedLLM."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from bot import wiring
from bot.config import Settings
from bot.engine.llm import LLMReply, LLMUnavailable, Role
from bot.engine.llmlimit import LimitedLLM, limited
from tests.fakes.llm import ScriptedLLM, llm_settings


class HeldLLM:
    """An LLM stand-in whose calls wait for `release`; counts how many ran at once."""

    model = "held"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.running = 0
        self.peak = 0
        self._lock = threading.Lock()

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stop: Sequence[str] | None = None,
        role: Role = "main",
        max_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> LLMReply:
        with self._lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        self.release.wait(10)
        with self._lock:
            self.running -= 1
        return LLMReply(content="ok")


def test_calls_beyond_the_limit_wait_for_a_slot() -> None:
    inner = HeldLLM()
    llm = LimitedLLM(inner, max_calls=2)
    threads = [threading.Thread(target=llm.complete, args=([{"role": "user", "content": "hi"}],)) for _ in range(6)]
    for thread in threads:
        thread.start()
    while llm.in_flight < 2:
        threading.Event().wait(0.01)
    inner.release.set()
    for thread in threads:
        thread.join(10)
    assert inner.peak == 2 and llm.peak_in_flight == 2 and llm.in_flight == 0


def test_a_cheap_call_does_not_wait_behind_held_main_calls() -> None:
    inner = HeldLLM()
    llm = LimitedLLM(inner, max_calls=1)
    main = threading.Thread(target=llm.complete, args=([{"role": "user", "content": "diagnose"}],))
    main.start()
    while llm.in_flight < 1:
        threading.Event().wait(0.01)
    cheap = threading.Thread(target=llm.complete, args=([{"role": "user", "content": "hi"}],), kwargs={"role": "cheap"})
    cheap.start()
    while inner.running < 2:  # both run at once although the main slot is taken
        threading.Event().wait(0.01)
    inner.release.set()
    main.join(10)
    cheap.join(10)
    assert inner.peak == 2


def test_a_call_that_finds_no_free_slot_within_its_time_left_fails_saying_so() -> None:
    inner = HeldLLM()
    llm = LimitedLLM(inner, max_calls=1)
    held = threading.Thread(target=llm.complete, args=([{"role": "user", "content": "diagnose"}],))
    held.start()
    while llm.in_flight < 1:
        threading.Event().wait(0.01)
    with pytest.raises(LLMUnavailable, match=r"all 1 main LLM slots stayed busy for the 0\.2 s left"):
        llm.complete([{"role": "user", "content": "why?"}], timeout_s=0.2)
    inner.release.set()
    held.join(10)
    assert llm.in_flight == 0 and llm.complete([{"role": "user", "content": "again"}], timeout_s=0.2).content == "ok"


def test_wiring_puts_the_one_adapter_behind_the_configured_limit(scripted_llm: ScriptedLLM) -> None:
    settings = llm_settings(scripted_llm)
    settings = settings.model_copy(update={"agent": settings.agent.model_copy(update={"max_concurrent_llm_calls": 3})})
    llm = wiring.build_llm(settings)
    assert isinstance(llm, LimitedLLM) and llm.max_calls == 3
    unlimited = Settings(_env_file=None).agent.model_copy(update={"max_concurrent_llm_calls": 0})  # type: ignore[call-arg]
    assert limited(HeldLLM(), unlimited.max_concurrent_llm_calls).__class__ is HeldLLM
