"""Start-up cost of each CLI command, of building the responder, and peak memory of a playbook diagnosis.

Each number comes from a fresh interpreter (a subprocess), as a user meets it. The heaviest imports are listed
from `python -X importtime`, so a regression names its module.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_startup.py -s
Prints numbers; asserts no timing.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 5
OWN = {"bot", "tools", "prompts", "site", "encodings", "io", "codecs", "abc", "os", "stat", "posixpath"}
ROOT = Path(__file__).resolve().parents[2]
NO_BACKENDS = {  # nothing configured that could answer: the playbook path, no model, a throwaway store
    "OPSBOT_LLM__BASE_URL": "",
    "OPSBOT_LLM__API_KEY": "",
    "OPENAI_API_KEY": "",
    "OPENAI_BASE_URL": "",
    "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9",
    "OPSBOT_PROMETHEUS__TIMEOUT_S": "1",
}

COMMANDS: dict[str, tuple[list[str], str]] = {
    "opsbot --help": (["--help"], ""),
    "opsbot diagnose --help": (["diagnose", "--help"], ""),
    "opsbot parse": (["parse"], 'Thought: t\nAction: query_logs\nAction Input: {"service": "order"}'),
    "opsbot classify (no model)": (["classify", "why is order slow since 15:05?"], ""),
}
BUILD = "import time; t, c = time.perf_counter(), time.process_time(); from bot import wiring; " \
        "s = wiring.load_settings(); r = wiring.build_responder(s); " \
        "print(f'{(time.perf_counter() - t) * 1000:.0f} {(time.process_time() - c) * 1000:.0f}')"


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, **NO_BACKENDS, "OPSBOT_STORE__PATH": str(tmp / "traces.db"), "COLUMNS": "120"}


def _cli(args: list[str], stdin: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one command; CPU (user + system of the child) is what load on the machine changes least."""
    return _run([sys.executable, "-c", "from bot.cli import main; main()", *args], stdin, env)


def _run(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, float]:
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return (time.perf_counter() - started) * 1000, cpu_s * 1000


def _heaviest_imports(args: list[str], env: dict[str, str], top: int = 5) -> list[tuple[str, int]]:
    """Third-party packages with the largest import time (µs): each package's outermost import, from -X importtime."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "from bot.cli import main; main()", *args],
                          env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    outermost: dict[str, int] = {}
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)", line)
        package = match.group(2).split(".")[0] if match else ""
        if match and package not in OWN and not package.startswith("_"):
            outermost[package] = max(outermost.get(package, 0), int(match.group(1)))
    return sorted(outermost.items(), key=lambda kv: -kv[1])[:top]


def test_command_start_up(tmp_path: Path) -> None:
    env = _env(tmp_path)
    print(f"\n{'command':30} {'wall median':>11} {'min':>6} {'CPU median':>10} {'min':>6}   heaviest third-party "
          "imports (ms)")
    for name, (args, stdin) in COMMANDS.items():
        samples = [_cli(args, stdin, env) for _ in range(RUNS)]
        wall, cpu = [w for w, _ in samples], [c for _, c in samples]
        heavy = ", ".join(f"{mod} {us / 1000:.0f}" for mod, us in _heaviest_imports(args, env))
        print(f"{name:30} {statistics.median(wall):11.0f} {min(wall):6.0f} {statistics.median(cpu):10.0f} "
              f"{min(cpu):6.0f}   {heavy}")
    floor = [_run([sys.executable, "-c", "pass"], "", env) for _ in range(RUNS)]  # the interpreter alone, now
    print(f"{'python -c pass (the floor)':30} {statistics.median([w for w, _ in floor]):11.0f} "
          f"{min(w for w, _ in floor):6.0f} {statistics.median([c for _, c in floor]):10.0f} "
          f"{min(c for _, c in floor):6.0f}   (load on the machine inflates every row alike)")


def test_build_responder_and_peak_rss(tmp_path: Path) -> None:
    env = _env(tmp_path)
    walls, cpus = [], []
    for _ in range(RUNS):
        done = subprocess.run([sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, check=True,
                              cwd=ROOT)
        wall, cpu = done.stdout.strip().splitlines()[-1].split()
        walls.append(float(wall))
        cpus.append(float(cpu))
    print(f"\nimport + build of the responder: wall median {statistics.median(walls):.0f} ms (min {min(walls):.0f}), "
          f"CPU median {statistics.median(cpus):.0f} ms (min {min(cpus):.0f})")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run([sys.executable, "-c", "from bot.cli import main; main()", "diagnose", "why is order slow?"],
                          env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    assert "playbook" in done.stdout, done.stdout + done.stderr  # the path measured is the model-free one
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    note = "" if peak_kb > before else " (a child measured earlier peaked higher; run this test alone)"
    print(f"peak RSS of `opsbot diagnose` on the playbook path (backends down): {peak_kb / 1024:.0f} MB{note}")
