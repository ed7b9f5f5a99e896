"""The wire-level stand-ins as child processes of `opsbot sandbox up`: the Kubernetes API over a scenario's
cluster (cluster.json) and Loki over its log documents (logs.jsonl).

    python -m bot.sandbox.standins.launch kubeapi --port 19161 --data <sandbox>/data/cluster.json
    python -m bot.sandbox.standins.launch loki --port 19162 --data <sandbox>/data/logs.jsonl

Each one serves until SIGTERM. `start_standin` runs one and waits until it answers; `is_our_standin` tells a
live stand-in of this sandbox from a recycled PID before anything is stopped.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from bot.sandbox.backends import Proc, pid_alive, spawn_server
from bot.sandbox.standins.kubeapi import FakeKubeAPI
from bot.sandbox.standins.loki import FakeLoki, lines_from_jsonl

KINDS = {"kubeapi": "/readyz", "loki": "/ready"}  # kind -> its anonymous readiness path


def start_standin(kind: str, data: Path, port: int, *, die_with_parent: bool = False) -> Proc:
    """Run one stand-in on 127.0.0.1:port over `data`; its log goes next to the data."""
    cmd = [
        sys.executable,
        "-m",
        "bot.sandbox.standins.launch",
        kind,
        "--port",
        str(port),
        "--data",
        str(data.resolve()),
    ]
    log_path = data.parent / f"{kind}.log"
    return spawn_server(
        cmd, f"http://127.0.0.1:{port}", KINDS[kind], log_path, 15.0, die_with_parent, name=f"{kind} stand-in"
    )


def is_our_standin(pid: int, sandbox_dir: Path) -> bool:
    """The PID is alive AND is a stand-in serving data under this sandbox (never stop a recycled PID)."""
    if not pid or not pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return "bot.sandbox.standins.launch" in cmdline and str(sandbox_dir.resolve()) in cmdline


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bot.sandbox.standins.launch", description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.kind == "kubeapi":
        stand_in: FakeKubeAPI | FakeLoki = FakeKubeAPI.from_file(args.data, port=args.port)
    else:
        stand_in = FakeLoki(lines=lines_from_jsonl(args.data), port=args.port)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print(f"{args.kind} stand-in serving {args.data} at {stand_in.url}", flush=True)
    done.wait()
    stand_in.stop()


if __name__ == "__main__":
    main()
