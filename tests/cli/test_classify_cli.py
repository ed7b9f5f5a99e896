"""`opsbot classify --jsonl` through the real CLI in a fresh interpreter: a hostile batch gets one answer a line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

NO_MODEL = {"OPSBOT_LLM__BASE_URL": "", "OPSBOT_LLM__API_KEY": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}

# (input line as bytes, what its answer must be: a route, or an error naming the line)
HOSTILE = [
    (b'"payment \\ud83d p99 high"', "route"),  # a lone surrogate, as JSON escapes it
    (b'"why is checkout slow since 15:05?"', "route"),
    (b'{"text": "why is order slow"}', "error"),  # JSON, but not a string
    (b"42", "error"),
    (b"null", "error"),
    (b"not json at all", "error"),
    (b'"unterminated', "error"),
    (b"\xff\xfe\xfa not utf-8", "error"),
    (b'"\\u0000\\u001b[31mred\\u202e order p99 now?"', "route"),  # control and bidi characters
    (b'"' + "ok 👍 谢谢".encode() + b'"', "route"),
    (b'"' + b"a" * 20_000 + b'"', "route"),  # longer than any surface lets in
    (b'"hi"', "route"),
]


def _run_classify(stdin: bytes, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, **NO_MODEL, "PYTHONIOENCODING": "ascii"}  # a terminal that cannot print UTF-8 itself
    return subprocess.run(
        [sys.executable, "-c", "from bot.cli import main\nmain()", "classify", *args],
        input=stdin,
        env=env,
        capture_output=True,
        check=False,
        cwd=tmp_path,
    )


def test_classify_jsonl_answers_every_line_of_a_hostile_batch(tmp_path: Path) -> None:
    batch = b"\n".join(line for line, _ in HOSTILE[:6]) + b"\n\n   \n" + b"\n".join(line for line, _ in HOSTILE[6:])
    done = _run_classify(batch + b"\n", tmp_path, "--jsonl")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    printed = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]  # valid UTF-8, valid JSON
    assert len(printed) == len(HOSTILE)  # blank lines are skipped, every other line answered in order
    numbers = [*range(1, 7), *range(9, 9 + len(HOSTILE) - 6)]  # input line numbers (two blank lines in between)
    for (line, expected), answer, number in zip(HOSTILE, printed, numbers, strict=True):
        if expected == "route":
            assert answer["route"] in ("diagnose", "lookup", "chitchat", "help", "act"), (line, answer)
            assert answer["request"] and answer["tier"] in ("rules", "classifier", "default"), answer
        else:
            assert set(answer) == {"error"} and f"input line {number} " in answer["error"], (line, answer)
    assert printed[0]["route"] == "diagnose" and printed[1]["route"] == "diagnose"
    assert printed[-1]["route"] == "chitchat"


def test_classify_one_message_with_a_lone_surrogate_answers_in_utf8(tmp_path: Path) -> None:
    done = _run_classify(b"", tmp_path, "payment \udc8d p99 high")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    answer = json.loads(done.stdout.decode("utf-8"))
    assert answer["route"] == "diagnose" and answer["request"] == "investigate"
