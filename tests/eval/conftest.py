"""Eval fixtures, and the hook that prints the suite's scores in CI whatever pytest's -q/-s flags say."""

from __future__ import annotations

import pytest

_REPORTS: list[tuple[str, str]] = []


def record_report(title: str, text: str) -> None:
    """Queue a report for the terminal summary (printed once, after the test results)."""
    _REPORTS.append((title, text))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, text in _REPORTS:
        terminalreporter.write_sep("=", title)
        for line in text.splitlines():
            terminalreporter.write_line(line)
