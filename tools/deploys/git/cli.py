"""The real `git` CLI over one local clone: commands with a timeout, and many file versions in one process.

Only ref names and object ids that git itself listed (or that a strict pattern validated) are passed to git, always
after the options, so model text can never become a git option or path.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tools.base import ToolError

SHA_RX = re.compile(r"^[0-9a-f]{7,40}$")


class GitRepo:
    """One repository, read with `git -C <path>` (no system config, no prompts, C locale, no pager)."""

    def __init__(self, path: str | Path, *, timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s

    def run(self, *args: str) -> str:
        """git's stdout as text; a ToolError with git's own message when it fails or takes too long."""
        return self._run(list(args), None).decode("utf-8", errors="replace")

    def blobs(self, specs: Sequence[str]) -> dict[str, str | None]:
        """`rev:path` -> the file's text there, None where it does not exist; one `git cat-file --batch` for all."""
        wanted = [s for s in dict.fromkeys(specs) if "\n" not in s]
        if not wanted:
            return {}
        out = self._run(["cat-file", "--batch"], "".join(f"{s}\n" for s in wanted).encode())
        found: dict[str, str | None] = {}
        pos = 0
        for spec in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) != 3 or header[1] != b"blob":  # "<spec> missing", or a tree/commit: not a file
                found[spec] = None
                size = int(header[2]) + 1 if len(header) == 3 else 0
                pos += size
                continue
            size = int(header[2])
            found[spec] = out[pos : pos + size].decode("utf-8", errors="replace")
            pos += size + 1
        return found

    def _run(self, args: list[str], stdin: bytes | None) -> bytes:
        if not (self.path / ".git").exists() and not (self.path / "HEAD").exists():
            raise ToolError(f"the deploy repository {self.path} does not exist or is not a git repository.")
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        command = ["git", "-C", str(self.path), "-c", "core.quotepath=off", "--no-pager", *args]
        try:
            done = subprocess.run(
                command, input=stdin, capture_output=True, timeout=self.timeout_s, env=env, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise ToolError(f"git did not answer within {self.timeout_s:g} s in {self.path}.") from exc
        except OSError as exc:
            raise ToolError(f"cannot run git: {exc}") from exc
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", errors="replace").strip()[:400]
            raise ToolError(f"git {args[0]} failed in {self.path}: {message}")
        return done.stdout
