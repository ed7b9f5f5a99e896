"""External MCP servers' tools, mounted as opsbot tools: allowlisted, size-limited, redacted like any tool.

The `mcp` package is async; opsbot is sync. Each server gets one MCPConnection: a session held open on its own
thread and event loop (one stdio subprocess, or one streamable HTTP session), reconnected once when it died.
A call from a tool thread waits for its result with a timeout. Remote tools are named `<server>_<tool>`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import sys
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TextIO

from mcp import Client, StdioServerParameters, stdio_client
from pydantic import BaseModel, ConfigDict, Field, create_model

from tools.base import ToolError, ToolResult, ToolSpec
from tools.toolset import CheckWarning

log = logging.getLogger(__name__)
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
_NAME_RX = re.compile(r"[^A-Za-z0-9_-]")


class MCPConnection:
    """One MCP session on a private event loop; `target` is StdioServerParameters or a streamable HTTP URL."""

    def __init__(self, target: StdioServerParameters | str, *, connect_timeout_s: float = 20.0) -> None:
        self.target = target
        self.connect_timeout_s = connect_timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="mcp-client")
        self._thread.start()
        self._lock = threading.Lock()
        self._client: Client | None = None
        self._holder: Any = None
        self._closing: asyncio.Event | None = None

    def describe(self) -> str:
        t = self.target
        return t if isinstance(t, str) else " ".join([t.command, *t.args])

    def list_tools(self) -> list[Any]:
        """The server's tools (every page)."""
        return list(self._run(lambda c: c.list_tools(), self.connect_timeout_s).tools)

    def call(self, name: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """One tools/call; protocol errors and timeouts become ToolErrors."""
        return self._run(lambda c: c.call_tool(name, arguments), timeout_s)

    def close(self) -> None:
        """End the session (the stdio server exits with it) and stop the loop."""
        if self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
        if self._holder is not None:
            try:
                self._holder.result(timeout=5)
            except Exception as exc:  # closing must not raise; the server may already be gone
                log.debug("mcp close: %s", exc)
        self._loop.call_soon_threadsafe(self._loop.stop)

    def _run(self, request: Any, timeout_s: float) -> Any:
        client = self._connected()
        future = asyncio.run_coroutine_threadsafe(request(client), self._loop)
        try:
            return future.result(timeout=timeout_s)
        except FutureTimeout as exc:
            future.cancel()
            raise ToolError(f"the MCP server {self.describe()} did not answer within {timeout_s:g} s") from exc
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(f"MCP request to {self.describe()} failed: {type(exc).__name__}: {exc}") from exc

    def _connected(self) -> Client:
        with self._lock:
            if self._client is not None and self._holder is not None and not self._holder.done():
                return self._client
            ready: asyncio.Future[Client] = self._loop.create_future()
            self._holder = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
            try:
                self._client = asyncio.run_coroutine_threadsafe(_wait(ready), self._loop).result(
                    timeout=self.connect_timeout_s
                )
            except Exception as exc:
                self._holder.cancel()
                raise ToolError(
                    f"cannot connect to the MCP server {self.describe()}: {type(exc).__name__}: {exc}"
                ) from exc
            return self._client

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        """Keep the session open until close(); report the client (or the failure) through `ready`."""
        self._closing = asyncio.Event()
        target = self.target
        try:
            # the server's stderr goes to ours when that is a real file (a test runner's capture is not)
            transport = stdio_client(target, errlog=_errlog()) if isinstance(target, StdioServerParameters) else target
            async with Client(transport) as client:
                ready.set_result(client)
                await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            raise


def _errlog() -> TextIO:
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        return open(os.devnull, "w")


async def _wait(ready: asyncio.Future[Client]) -> Client:
    return await ready


class MCPTools:
    """The allowed tools of one MCP server as ToolSpecs; results are cut at max_output_chars."""

    def __init__(
        self,
        server: str,
        connection: MCPConnection,
        allowed: list[str],
        *,
        timeout_s: float = 20.0,
        max_output_chars: int = 4_000,
    ) -> None:
        self.server, self.connection = server, connection
        self.allowed = set(allowed)
        self.timeout_s, self.max_output_chars = timeout_s, max_output_chars

    def mounted(self, tools: list[Any]) -> list[Any]:
        return [t for t in tools if "*" in self.allowed or t.name in self.allowed]

    def specs(self) -> list[ToolSpec]:
        """A ToolSpec per allowed remote tool (listing the server's tools once)."""
        return [self._spec(t) for t in self.mounted(self.connection.list_tools())]

    def check(self) -> str:
        """List the tools: proves the server starts and speaks MCP; warns when the allowlist mounts none."""
        tools = self.connection.list_tools()
        mounted = [t.name for t in self.mounted(tools)]
        if not mounted:
            raise CheckWarning(f"{len(tools)} tools offered, none allowed (set allowed_tools)")
        return f"{len(mounted)} of {len(tools)} tools mounted: {', '.join(mounted)}"

    def call(self, remote: str, **arguments: Any) -> ToolResult:
        """Call one remote tool; None arguments (not given) are left out."""
        sent = {k: v for k, v in arguments.items() if v is not None}
        result = self.connection.call(remote, sent, self.timeout_s)
        text = "\n".join(_block_text(b) for b in result.content).strip()
        if not text and result.structured_content is not None:
            text = str(result.structured_content)
        if len(text) > self.max_output_chars:
            text = text[: self.max_output_chars] + f"\n… cut at {self.max_output_chars:,} of {len(text):,} characters"
        if result.is_error:
            return ToolResult("error", f"{self.server} {remote} failed: {text or 'no details'}")
        return ToolResult("ok", text) if text else ToolResult("no_data", f"{self.server} {remote} returned nothing.")

    def _spec(self, remote: Any) -> ToolSpec:
        name = _NAME_RX.sub("_", f"{self.server}_{remote.name}")[:64]
        schema = dict(remote.input_schema or {"type": "object", "properties": {}})
        schema.setdefault("properties", {})
        description = f"[{self.server}, over MCP] {remote.description or remote.name}"
        func = functools.partial(self.call, remote.name)
        return ToolSpec(name, description, schema, func, args_model_from_schema(name, schema))


def args_model_from_schema(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model for call_tool's validation: the schema's properties, simple JSON types, required ones."""
    required = set(schema.get("required", []))
    fields: dict[str, Any] = {}
    for prop, spec in (schema.get("properties") or {}).items():
        kind = _JSON_TYPES.get(spec.get("type", "") if isinstance(spec, dict) else "", Any)
        default = ... if prop in required else spec.get("default") if isinstance(spec, dict) else None
        optional = Any if kind is Any else kind | None
        fields[prop] = (kind if prop in required else optional, Field(default))
    return create_model(f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields)


def _block_text(block: Any) -> str:
    if getattr(block, "type", "") == "text":
        return str(block.text)
    return f"[{getattr(block, 'type', 'content')} omitted]"
