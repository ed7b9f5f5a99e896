"""Benches are named bench_*.py: collect them when this folder is run on purpose (`pytest tests/bench -s`)."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Module | None:
    # A file named on the command line is collected by pytest itself; only add the ones found in the folder.
    if file_path.suffix == ".py" and file_path.name.startswith("bench_") and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None
