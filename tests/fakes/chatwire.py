"""The OpenAI chat-completions wire format as ScriptedLLM speaks it: completions, tool calls, SSE chunks, error
bodies, token counts, and the requests real servers reject (an unanswered tool_call_id; llama.cpp's null content).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

MODEL = "scripted-model"
_FENCED = re.compile(r"<observation>.*?</observation>", re.DOTALL)
Reply = dict[str, Any]


UNANSWERED_TEXT = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)


def strict_refusal(body: Mapping[str, Any]) -> str:
    """What llama.cpp's server refuses outright (HTTP 500): an assistant message with tool calls and null content."""
    for message in body.get("messages", []):
        if message.get("role") == "assistant" and message.get("tool_calls") and message.get("content") is None:
            return "Expected 'content' to be a string or an array, got null (assistant message with tool_calls)"
    return ""


def tool_results(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the tools returned so far, as the model was sent it: `role: tool` messages, or the fenced results under
    `Newest step:` in the one user message of opsbot's default context (a stand-in model reads either)."""
    results = [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]
    for message in messages:
        content = str(message.get("content") or "") if message.get("role") == "user" else ""
        if "\nNewest step:\n" in content:
            results += _FENCED.findall(content.split("\nNewest step:\n", 1)[1])
    return results


def unanswered_tool_call_ids(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Ids of assistant tool calls with no `role: tool` answer right after them (what real servers reject)."""
    missing: list[str] = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        answered = set()
        for later in messages[i + 1 :]:
            if later.get("role") != "tool":
                break
            answered.add(later.get("tool_call_id"))
        missing += [call["id"] for call in message["tool_calls"] if call.get("id") not in answered]
    return missing


def error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


def completion_from_reply(new_id: Callable[[str], str], body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """The chat.completion object for a scripted reply; ids come from new_id("chatcmpl"), new_id("call")."""
    content = reply.get("content")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls = [_tool_call(new_id, call) for call in reply.get("tool_calls", [])]
    if calls:
        message["tool_calls"] = calls
    finish = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
    completion: dict[str, Any] = {
        "id": new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }
    usage = reply.get("usage", _rough_usage(body, content, calls))
    if usage is not None:
        usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
        completion["usage"] = usage
    return completion


def _tool_call(new_id: Callable[[str], str], call: Mapping[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "id": call.get("id") or new_id("call"),
        "type": "function",
        "function": {"name": call["name"], "arguments": arguments},
    }


def _rough_usage(body: Mapping[str, Any], content: str | None, calls: list[dict[str, Any]]) -> dict[str, int]:
    """A deterministic stand-in for a server's token counts: about four characters a token."""
    prompt = len(json.dumps(body.get("messages", []))) // 4
    completion = (len(content or "") + len(json.dumps(calls) if calls else "")) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def stream_chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """The completion as SSE chunks: role, content in pieces, tool calls, finish, optional usage."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    text = message.get("content") or ""
    for start in range(0, len(text), 16):
        yield chunk({"content": text[start : start + 16]})
    for index, call in enumerate(message.get("tool_calls", [])):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": call["function"]["arguments"]}}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage and "usage" in completion:
        yield base | {"choices": [], "usage": completion["usage"]}
