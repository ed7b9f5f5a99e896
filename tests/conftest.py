"""Shared fixtures live in tests/fakes/ (the stand-ins) and are registered here once."""

pytest_plugins = [
    "tests.fakes.llm",
    "tests.fakes.slack",
    "tests.fakes.backends",
    "tests.fakes.redis",
    "tests.fakes.replicas",
    "tests.stacks.fixtures",
]
