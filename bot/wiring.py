"""The composition root: the one place that reads Settings and builds clients, tools, LLM, agent and apps.

Every other module receives ready objects and plain limits through its constructor.
"""

from __future__ import annotations

import logging

from bot.agent.context import ContextLimits
from bot.agent.llm import LLM, OpenAILLM
from bot.agent.types import Budget
from bot.config import Settings

log = logging.getLogger(__name__)


def load_settings() -> Settings:
    """Settings from the environment and ./.env."""
    return Settings()


def build_budget(settings: Settings) -> Budget:
    a = settings.agent
    return Budget(
        max_steps=a.max_steps,
        time_budget_s=a.time_budget_s,
        token_budget=a.token_budget,
        max_format_errors=a.max_format_errors,
        max_args_chars=a.max_args_chars,
        parallel_tools=a.parallel_tools,
    )


def build_llm(settings: Settings) -> LLM | None:
    """The OpenAI-compatible adapter, or None when no LLM is configured (the playbook answers then)."""
    c = settings.llm
    if not c.configured:
        return None
    return OpenAILLM(
        base_url=c.base_url,
        api_key=c.api_key.get_secret_value(),
        model=c.model,
        cheap_model=c.cheap_model,
        timeout_s=c.timeout_s,
        max_retries=c.max_retries,
        temperature=c.temperature,
        max_reply_tokens=c.max_reply_tokens,
        tokenizer=c.tokenizer,
    )


def build_context_limits(settings: Settings) -> ContextLimits:
    """How much of a run's history the model sees (observation cut, steps kept verbatim)."""
    return ContextLimits(
        max_observation_chars=settings.agent.max_observation_chars,
        keep_recent_steps=settings.agent.keep_recent_steps,
    )
