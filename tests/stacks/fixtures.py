"""Session fixtures: `make_stack("shop")` builds and starts a stack once per session (tests/stacks/spec.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

import pytest

from tests.stacks.build import RunningStack, build_stack, start_stack
from tests.stacks.spec import STACKS


@pytest.fixture(scope="session")
def make_stack(
    tmp_path_factory: pytest.TempPathFactory, sandbox_now: datetime
) -> Iterator[Callable[[str], RunningStack]]:
    running: dict[str, RunningStack] = {}

    def make(name: str) -> RunningStack:
        if name not in running:
            built = build_stack(STACKS[name], tmp_path_factory.mktemp(f"stack-{name}"), sandbox_now)
            running[name] = start_stack(built)
        return running[name]

    yield make
    for stack in running.values():
        stack.stop()


@pytest.fixture(scope="session")
def plain_stack(tmp_path_factory: pytest.TempPathFactory, sandbox_now: datetime) -> Iterator[str]:
    """The URL of the plain-client stack's Prometheus (tests/stacks/plain.py), built and started once."""
    from tests.stacks.plain import build_plain_stack, start_plain_stack

    proc = start_plain_stack(build_plain_stack(tmp_path_factory.mktemp("stack-plain"), sandbox_now))
    yield proc.url
    proc.stop()
