"""Start-up cost of each CLI command, of building the responder, and peak memory of a playbook diagnosis.

Each number comes from a fresh interpreter (a subprocess), as a user meets it. The heaviest imports are listed
from `python -X importtime`, so a regression names its module.

Before and after in one run: set BENCH_STARTUP_BASE to an unpacked copy of another commit (e.g.
`git archive main | tar -x -C /tmp/base`); each number is then measured for both trees, runs interleaved, with this
venv's packages, so the load on the machine weighs on both alike.

Bytecode: each tree's modules are compiled first (compileall), as pip compiles an installed package's. Without
that, a shell with PYTHONDONTWRITEBYTECODE set (this venv is an editable install) compiles every project module
from source on every run, ~0.1-0.2 s that no installed opsbot pays.

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_startup.py -s
Prints numbers; asserts no timing.
"""

from __future__ import annotations

import functools
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 7
OWN = {"bot", "tools", "prompts", "site", "encodings", "io", "codecs", "abc", "os", "stat", "posixpath"}
ROOT = Path(__file__).resolve().parents[2]
BASE = os.environ.get("BENCH_STARTUP_BASE", "")
TREES = {"this": ROOT, **({"base": Path(BASE)} if BASE else {})}
NO_BACKENDS = {  # nothing configured that could answer: the playbook path, no model, a throwaway store
    "OPSBOT_LLM__BASE_URL": "",
    "OPSBOT_LLM__API_KEY": "",
    "OPENAI_API_KEY": "",
    "OPENAI_BASE_URL": "",
    "OPSBOT_PROMETHEUS__URL": "http://127.0.0.1:9",
    "OPSBOT_PROMETHEUS__TIMEOUT_S": "1",
}
CLI = "from bot.cli import main; main()"
PEAK = (
    "import atexit, re, sys\natexit.register(lambda: print('VMHWM ' + re.search(r'VmHWM:\\s+(\\d+)', "
    "open('/proc/self/status').read()).group(1), file=sys.stderr))\n" + CLI
)  # the peak RSS (KiB) at exit
COMMANDS: dict[str, tuple[list[str], str]] = {
    "opsbot --help": (["--help"], ""),
    "opsbot diagnose --help": (["diagnose", "--help"], ""),
    "opsbot parse": (["parse"], 'Thought: t\nAction: query_logs\nAction Input: {"service": "order"}'),
    "opsbot classify (no model)": (["classify", "why is order slow since 15:05?"], ""),
}
BUILD = (
    "import time; t, c = time.perf_counter(), time.process_time(); from bot import wiring; "
    "s = wiring.load_settings(); r = wiring.build_responder(s); "
    "print(f'{(time.perf_counter() - t) * 1000:.0f} {(time.process_time() - c) * 1000:.0f}')"
)


def _env(tmp: Path) -> dict[str, str]:
    _compile_trees()
    return {**os.environ, **NO_BACKENDS, "OPSBOT_STORE__SQLITE_PATH": str(tmp / "traces.db"), "COLUMNS": "120"}


@functools.cache
def _compile_trees() -> None:
    """Bytecode for every tree's own modules, written once (compileall writes even under PYTHONDONTWRITEBYTECODE)."""
    for cwd in TREES.values():
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "bot", "tools", "prompts"],
            cwd=cwd,
            check=True,
            capture_output=True,
        )


def _run(argv: list[str], stdin: str, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms) of one child; CPU (user + system of the child) is what load on the machine changes least."""
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True, check=False, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return (time.perf_counter() - started) * 1000, cpu_s * 1000


def _heaviest_imports(args: list[str], env: dict[str, str], top: int = 5) -> list[tuple[str, int]]:
    """Third-party packages with the largest import time (µs): each package's outermost import, from -X importtime."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", CLI, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    outermost: dict[str, int] = {}
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)", line)
        package = match.group(2).split(".")[0] if match else ""
        if match and package not in OWN and not package.startswith("_"):
            outermost[package] = max(outermost.get(package, 0), int(match.group(1)))
    return sorted(outermost.items(), key=lambda kv: -kv[1])[:top]


def _load() -> str:
    """The load average (1, 5, 15 min): every number here is only as good as the quiet it was taken in."""
    try:
        return " ".join(Path("/proc/loadavg").read_text(encoding="ascii").split()[:3])
    except OSError:
        return "unknown"


def _interleaved(argv: list[str], stdin: str, env: dict[str, str]) -> dict[str, list[tuple[float, float]]]:
    """RUNS samples of argv in each tree, alternating trees run by run."""
    samples: dict[str, list[tuple[float, float]]] = {tree: [] for tree in TREES}
    for _ in range(RUNS):
        for tree, cwd in TREES.items():
            samples[tree].append(_run(argv, stdin, env, cwd))
    return samples


def _row(name: str, samples: list[tuple[float, float]]) -> str:
    wall, cpu = [w for w, _ in samples], [c for _, c in samples]
    return f"{name:36} {statistics.median(wall):11.0f} {min(wall):6.0f} {statistics.median(cpu):10.0f} {min(cpu):6.0f}"


def test_command_start_up(tmp_path: Path) -> None:
    env = _env(tmp_path)
    print(f"\nload average before: {_load()}; trees: {', '.join(f'{t} = {p}' for t, p in TREES.items())}")
    print(
        f"{'command':36} {'wall median':>11} {'min':>6} {'CPU median':>10} {'min':>6}   heaviest third-party "
        "imports in this tree (ms)"
    )
    for name, (args, stdin) in COMMANDS.items():
        samples = _interleaved([sys.executable, "-c", CLI, *args], stdin, env)
        heavy = ", ".join(f"{mod} {us / 1000:.0f}" for mod, us in _heaviest_imports(args, env))
        for tree in TREES:
            print(_row(f"{name} [{tree}]", samples[tree]) + (f"   {heavy}" if tree == "this" else ""))
    floor = [_run([sys.executable, "-c", "pass"], "", env, ROOT) for _ in range(RUNS)]  # the interpreter alone, now
    print(_row("python -c pass (the floor)", floor) + "   (load on the machine inflates every row alike)")
    print(f"load average after: {_load()}")


# Where the build's time goes, stage by stage in one fresh interpreter (CPU ms of each stage): the interpreter, the
# pydantic stack Settings needs (pydantic, pydantic-settings, the Settings classes, Settings()), then the project's own
# modules the responder imports and the build itself.
STAGES = (
    "import time; c = time.process_time; marks = [('interpreter', c())]\n"
    "import pydantic; from pydantic import BaseModel; marks.append(('pydantic', c()))\n"
    "import pydantic_settings; marks.append(('pydantic-settings', c()))\n"
    "import bot.config; marks.append(('Settings classes', c()))\n"
    "s = bot.config.Settings(); marks.append(('Settings()', c()))\n"
    "import bot.wiring.core; marks.append(('project imports', c()))\n"
    "from bot import wiring; r = wiring.build_responder(s); marks.append(('build_responder', c()))\n"
    "print('|'.join(f'{n}={(t - (marks[i - 1][1] if i else 0)) * 1000:.1f}' for i, (n, t) in enumerate(marks)))\n"
)


def test_build_responder_by_stage(tmp_path: Path) -> None:
    env = _env(tmp_path)
    print(f"\nload average before: {_load()}")
    runs: dict[str, dict[str, list[float]]] = {tree: {} for tree in TREES}
    for _ in range(RUNS):  # trees alternate run by run
        for tree, cwd in TREES.items():
            done = subprocess.run(
                [sys.executable, "-c", STAGES], env=env, capture_output=True, text=True, check=True, cwd=cwd
            )
            for pair in done.stdout.strip().splitlines()[-1].split("|"):
                name, ms = pair.split("=")
                runs[tree].setdefault(name, []).append(float(ms))
    for tree, stages in runs.items():
        medians = {name: statistics.median(ms) for name, ms in stages.items()}
        print(
            f"build by stage [{tree}], CPU median ms: "
            + ", ".join(f"{n} {ms:.0f}" for n, ms in medians.items())
            + f"; sum {sum(medians.values()):.0f}"
        )
    print(f"load average after: {_load()}")


def test_build_responder_and_peak_rss(tmp_path: Path) -> None:
    env = _env(tmp_path)
    print(f"\nload average before: {_load()}")
    walls: dict[str, list[float]] = {tree: [] for tree in TREES}
    cpus: dict[str, list[float]] = {tree: [] for tree in TREES}
    for _ in range(RUNS):  # trees alternate run by run, as for the commands
        for tree, cwd in TREES.items():
            done = subprocess.run(
                [sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, check=True, cwd=cwd
            )
            wall, cpu = done.stdout.strip().splitlines()[-1].split()
            walls[tree].append(float(wall))
            cpus[tree].append(float(cpu))
    for tree in TREES:
        print(
            f"import + build of the responder [{tree}]: wall median {statistics.median(walls[tree]):.0f} ms "
            f"(min {min(walls[tree]):.0f}), CPU median {statistics.median(cpus[tree]):.0f} ms "
            f"(min {min(cpus[tree]):.0f})"
        )
    for tree, cwd in TREES.items():
        peaks = []
        for _ in range(3):
            out, peak_kb = _peak_rss_kb([sys.executable, "-c", PEAK, "diagnose", "why is order slow?"], env, cwd)
            assert "playbook" in out, out  # the path measured is the model-free one
            peaks.append(peak_kb / 1024)
        print(
            f"peak RSS of `opsbot diagnose` on the playbook path (backends down) [{tree}]: "
            f"{statistics.median(peaks):.1f} MB (max {max(peaks):.1f})"
        )
    print(f"load average after: {_load()}")


def _peak_rss_kb(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[str, int]:
    """(stdout, peak RSS in KiB) of one child, from its own VmHWM at exit.

    Not getrusage: a child's ru_maxrss keeps the peak from before its exec, when it was a fork of this pytest
    process (~70 MB), so it never reads below pytest's own size.
    """
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=cwd)
    peak = re.search(r"^VMHWM (\d+)$", done.stderr, re.MULTILINE)
    assert peak, done.stderr
    return done.stdout, int(peak.group(1))


# Peak memory with live backends: a sandbox (real Prometheus, SQLite logs, git deploys) answers, so the whole
# playbook runs: every series is analysed, the logs and deploys are read. The same question in each tree.
LIVE_QUESTION = "why is order slow since 15:05?"  # the default scenario's incident (hikari-pool)
RSS_STEPS = (  # what a diagnosis loads, in the order it loads it; VmRSS after each names the cost
    ("python", "pass"),
    ("typer (the CLI)", "import typer"),
    ("pydantic + pydantic-settings (Settings)", "import pydantic, pydantic_settings"),
    ("bot.wiring + bot.playbook", "import bot.wiring, bot.playbook"),
    ("the intent classifier artifact", "from bot.routing.model import shipped_model; shipped_model()"),
    (
        "the Prometheus client (+ its HTTP library)",
        "from bot import wiring; wiring.build_prometheus(wiring.load_settings())",
    ),
    (
        "tools.analysis.changepoints + trends + metrics (+ numpy in trees that use it)",
        "import tools.analysis.changepoints, tools.analysis.trends, tools.metrics.query",
    ),
)


def _sandbox_env(tmp: Path) -> dict[str, str]:
    """`opsbot sandbox up` on free ports under tmp, and the settings that point opsbot at it (its opsbot.env)."""
    from bot.sandbox.backends import free_port

    env = {
        **_env(tmp),
        "XDG_STATE_HOME": str(tmp / "state"),
        "OPSBOT_SANDBOX__PROMETHEUS_PORT": str(free_port()),
        "OPSBOT_SANDBOX__OSMEM_PORT": str(free_port()),
    }
    for name in ("OPSBOT_PROMETHEUS__URL", "OPSBOT_PROMETHEUS__TIMEOUT_S"):
        env.pop(name)
    subprocess.run(
        [sys.executable, "-c", CLI, "sandbox", "up"], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    )
    for line in (tmp / "state" / "opsbot" / "sandbox" / "opsbot.env").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    return env


def _rss_steps_mb(cwd: Path, env: dict[str, str]) -> list[tuple[str, float]]:
    """(step, VmRSS in MB after it) in one fresh interpreter, the steps run in order (settings from `env`)."""
    script = "import re\nrss = lambda: re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
    script += "".join(f"{code}\nprint(rss())\n" for _, code in RSS_STEPS)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True, cwd=cwd)
    return [(name, int(kb) / 1024) for (name, _), kb in zip(RSS_STEPS, done.stdout.split(), strict=True)]


def test_peak_rss_of_a_playbook_diagnosis_with_live_backends(tmp_path: Path) -> None:
    print(f"\nload average before: {_load()}")
    env = _sandbox_env(tmp_path)
    argv = [sys.executable, "-c", PEAK, "diagnose", LIVE_QUESTION]
    try:
        peaks: dict[str, list[float]] = {tree: [] for tree in TREES}
        one_arena: list[float] = []  # the lever weighed: each tool-call thread may get a glibc malloc arena
        for _ in range(3):  # trees alternate run by run
            for tree, cwd in TREES.items():
                out, peak_kb = _peak_rss_kb(argv, env, cwd)
                assert "playbook" in out and "Evidence" in out, out  # the model-free path, and it found evidence
                peaks[tree].append(peak_kb / 1024)
            one_arena.append(_peak_rss_kb(argv, {**env, "MALLOC_ARENA_MAX": "1"}, ROOT)[1] / 1024)
    finally:
        subprocess.run(
            [sys.executable, "-c", CLI, "sandbox", "down"], env=env, capture_output=True, check=False, cwd=ROOT
        )
    for tree in TREES:
        print(
            f"peak RSS of `opsbot diagnose` on the playbook path, live sandbox backends [{tree}]: "
            f"{statistics.median(peaks[tree]):.1f} MB (max {max(peaks[tree]):.1f})"
        )
    print(
        f"  the same with MALLOC_ARENA_MAX=1 [this]: {statistics.median(one_arena):.1f} MB (max {max(one_arena):.1f})"
    )
    _print_rss_steps(env, statistics.median(peaks["this"]))
    print(f"load average after: {_load()}")


def _print_rss_steps(env: dict[str, str], peak_mb: float) -> None:
    """The per-step table, one column per tree; the last row is what running adds on top of the imports."""
    steps = {tree: _rss_steps_mb(cwd, env) for tree, cwd in TREES.items()}
    print("resident after each step of what a diagnosis loads (MB; + = the step's cost):")
    print(f"  {'step':44}" + "".join(f"{tree:>16}" for tree in TREES))
    previous = dict.fromkeys(TREES, 0.0)
    for index, (name, _) in enumerate(RSS_STEPS):
        cells = ""
        for tree in TREES:
            mb = steps[tree][index][1]
            cells += f"{mb:8.1f} +{mb - previous[tree]:5.1f}  "
            previous[tree] = mb
        print(f"  {name:44}{cells}")
    print(f"  {'running the diagnosis (peak - imports) [this]':44}{peak_mb:8.1f} +{peak_mb - previous['this']:5.1f}")
