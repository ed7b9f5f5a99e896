"""Offline token counting: real tiktoken from the bpe-openai files, a rough fallback otherwise."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from bot.engine import tokens
from bot.engine.tokens import count_message_tokens, count_tokens, encoder_for


def test_real_tokenizer_works_offline() -> None:
    assert encoder_for("o200k_base") is not None
    assert count_tokens("hello world") == 2
    assert count_tokens("hello world", "cl100k_base") == 2
    assert count_tokens("") == 0


def test_tiktoken_cache_is_seeded_from_the_bundled_files() -> None:
    encoder_for("o200k_base")
    cache = Path(os.environ["TIKTOKEN_CACHE_DIR"])
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    assert (cache / hashlib.sha1(url.encode()).hexdigest()).stat().st_size > 1_000_000


def test_unknown_encoding_falls_back_to_four_characters_a_token() -> None:
    assert encoder_for("no_such_encoding") is None
    assert count_tokens("x" * 400, "no_such_encoding") == 101


def test_seeding_into_a_fresh_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tokens.seed_tiktoken_cache() == tmp_path
    assert len(list(tmp_path.iterdir())) == 2


def test_message_tokens_include_framing_and_tool_calls() -> None:
    plain = [{"role": "user", "content": "why is order slow?"}]
    with_call: list[dict[str, Any]] = [
        *plain,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "query_logs", "arguments": '{"service": "order"}'},
                }
            ],
        },
    ]
    assert count_message_tokens(plain) > count_tokens("why is order slow?")
    assert count_message_tokens(with_call) > count_message_tokens(plain) + 10
