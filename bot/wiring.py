"""The composition root: the one place that reads Settings and builds clients, tools, LLM, agent and apps.

Every other module receives ready objects and plain limits through its constructor.
"""

from __future__ import annotations

import logging

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
