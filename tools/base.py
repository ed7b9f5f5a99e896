"""The tool interface: a typed, documented function becomes a ToolSpec, and call_tool() is the one boundary.

A tool's name is what the model sees, its typed parameters are the argument schema, and its docstring is
the description (when to use it, legal values, how much it returns). Every failure the model could fix
comes back as a ToolResult, never as an exception.

A built-in tool builds its result as typed data first (a ToolData: series with change points, deploys, log
signatures ...) and renders the text the model reads from it; code outside tools/ reads the data, never the text
(tools/results.py lists the kinds and finds them on a step). MCP tools return text only: their data is None.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

log = logging.getLogger(__name__)

ToolStatus = Literal["ok", "error", "no_data", "refused"]


class ToolError(Exception):
    """An error the model can fix. Its message is shown to the model verbatim, so make it actionable."""


class ToolData:
    """A tool's typed result: a frozen dataclass subclass whose `kind` is the stable name it is stored under.

    Numbers stay numbers (a ratio is a float, never the rounded text the model reads), times are aware UTC
    datetimes, sequences are tuples. tools/results.py lists every kind; a stored trace names the kind, not the class,
    so a class may move between modules without breaking old traces.
    """

    kind: ClassVar[str] = ""


@dataclass(frozen=True)
class ToolResult:
    """What one tool call returned: its status, the text the model reads, and the data that text was rendered
    from (None for errors and for tools whose results are text only, as MCP tools' are)."""

    status: ToolStatus
    text: str
    data: ToolData | None = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object
    func: Callable[..., ToolResult | str]
    args_model: type[BaseModel]

    def to_openai(self) -> dict[str, Any]:
        """The `tools=` entry for OpenAI-compatible chat completions."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def tool(
    func: Callable[..., ToolResult | str],
    *,
    name: str | None = None,
    description: str | None = None,
    choices: Mapping[str, Sequence[str]] | None = None,
) -> ToolSpec:
    """Build a ToolSpec from a typed function or bound method.

    `Annotated[T, "text"]` parameters get "text" as their schema description. `choices` narrows a string
    parameter to values known only at run time (e.g. the configured metric catalogue).
    """
    hints = typing.get_type_hints(func, include_extras=True)
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(func).parameters.items():
        annotation = hints.get(pname, str)
        doc = ""
        if typing.get_origin(annotation) is typing.Annotated:
            annotation, *extras = typing.get_args(annotation)
            doc = next((e for e in extras if isinstance(e, str)), "")
        if choices and pname in choices:
            annotation = Literal[tuple(choices[pname])]
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, Field(default, description=doc or None))
    tool_name = name or func.__name__
    model = create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    text = description or inspect.getdoc(func) or ""
    return ToolSpec(tool_name, text.strip(), schema, func, model)


class Toolbox:
    """The tools one run may use. Duplicate names fail at construction, never silently override.

    `redact` is the one redaction of every result, its text and the strings in its data (see redacted_data): a
    secret shape it matches must not run across a line break.
    """

    def __init__(self, specs: Iterable[ToolSpec], redact: Callable[[str], str] | None = None) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ValueError(f"duplicate tool name {spec.name!r}")
            self._specs[spec.name] = spec
        self.redact = redact

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)


def _run_bounded(
    func: Callable[..., ToolResult | str], kwargs: dict[str, Any], timeout_s: float | None
) -> ToolResult | str:
    """Run one tool call in a daemon thread of its own, so a hung backend costs the loop at most its timeout.

    Not a module-level ThreadPoolExecutor: at interpreter exit concurrent.futures refuses new work ("cannot
    schedule new futures after shutdown") while diagnoses are still draining, and its workers are joined at
    exit, so a hung call would hold the process. A thread start costs far less than any backend call.
    """
    if timeout_s is None:  # nothing to enforce: no thread at all
        return func(**kwargs)
    future: Future[ToolResult | str] = Future()

    def target() -> None:
        try:
            future.set_result(func(**kwargs))
        except BaseException as exc:  # handed to the caller, which turns it into a ToolResult
            future.set_exception(exc)

    threading.Thread(target=target, name="tool-call", daemon=True).start()
    return future.result(timeout=timeout_s)


def validation_message(name: str, exc: ValidationError) -> str:
    """Turn pydantic's errors into one observation the model can act on."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        got = f" (got {err['input']!r})" if err["type"] != "missing" else ""
        problems.append(f"{where}: {err['msg']}{got}")
    return f"invalid arguments for {name}: " + "; ".join(problems)


def call_tool(
    toolbox: Toolbox,
    name: str,
    args: Mapping[str, Any],
    *,
    max_args_chars: int = 2_000,
    timeout_s: float | None = None,
) -> ToolResult:
    """Validate, run and wrap one tool call. Every failure becomes a ToolResult the model can read.

    The one redaction pass of a tool's result happens here, over its text and over every string inside its data
    (a log example, a deploy summary, a diff line may be shown to users from the data as well as from the text).
    An error carries no data, whatever the tool returned with it.
    """
    result = _call_unredacted(toolbox, name, args, max_args_chars, timeout_s)
    data = result.data if result.status != "error" else None
    if toolbox.redact is not None:
        return ToolResult(result.status, toolbox.redact(result.text), redacted_data(data, toolbox.redact))
    return result if data is result.data else ToolResult(result.status, result.text)


def redacted_data(data: ToolData | None, redact: Callable[[str], str]) -> ToolData | None:
    """`data` with `redact` applied to every string inside it (field values, tuple items, mapping keys and values);
    numbers, times and the structure stay as they were, and so does every part with nothing to redact.

    The distinct strings go through `redact` in one call, one per record (a record separator on a line of its
    own between them): a hundred log lines cost one pass, not a hundred. A redactor's match never crosses a line
    break, so each string is redacted as it would be alone; when a match does take a separator (a private key
    block cut off at a string's end runs to the end of the text), the strings are redacted one by one instead.
    """
    if data is None:
        return None
    found: dict[str, None] = {}
    _collect_strings(data, found)
    strings = [text for text in found if text]
    pieces = redact(_RECORD.join(strings)).split(_RECORD) if strings else []
    if len(pieces) != len(strings):
        pieces = [redact(text) for text in strings]
    cleaned = {text: piece for text, piece in zip(strings, pieces, strict=True) if piece != text}
    return typing.cast(ToolData, _map_strings(data, cleaned)) if cleaned else data


_RECORD = "\n\x1e\n"  # between the strings of one redaction pass: no secret shape spans a line break


def _collect_strings(value: Any, into: dict[str, None]) -> None:
    if isinstance(value, str):
        into[value] = None
    elif isinstance(value, tuple | list):
        for item in value:
            _collect_strings(item, into)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _collect_strings(key, into)
            _collect_strings(item, into)
    elif is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            _collect_strings(getattr(value, f.name), into)


def _map_strings(value: Any, cleaned: Mapping[str, str]) -> Any:
    """`value` with each string in `cleaned` replaced; a part with nothing replaced is returned as it was."""
    if isinstance(value, str):
        return cleaned.get(value, value)
    if isinstance(value, tuple | list):
        items = [_map_strings(v, cleaned) for v in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else type(value)(items)
    if isinstance(value, Mapping):
        pairs = {_map_strings(k, cleaned): _map_strings(v, cleaned) for k, v in value.items()}
        return value if pairs == value else pairs
    if is_dataclass(value) and not isinstance(value, type):
        changed = {}
        for f in fields(value):
            old = getattr(value, f.name)
            new = _map_strings(old, cleaned)
            if f.init and new is not old:
                changed[f.name] = new
        return replace(value, **changed) if changed else value
    return value


def _call_unredacted(
    toolbox: Toolbox, name: str, args: Mapping[str, Any], max_args_chars: int, timeout_s: float | None
) -> ToolResult:
    spec = toolbox.get(name)
    if spec is None:
        return ToolResult("error", f"unknown tool {name!r}. Valid tools: {', '.join(toolbox.names)}.")
    size = len(json.dumps(args, ensure_ascii=False, default=str))
    if size > max_args_chars:
        return ToolResult(
            "refused", f"arguments are {size:,} characters; the limit is {max_args_chars:,}. Send shorter ones."
        )
    try:
        parsed = spec.args_model.model_validate(dict(args))
    except ValidationError as exc:
        return ToolResult("error", validation_message(name, exc))
    kwargs = {k: getattr(parsed, k) for k in type(parsed).model_fields}
    try:
        out = _run_bounded(spec.func, kwargs, timeout_s)
    except FutureTimeout:
        return ToolResult("error", f"{name} timed out after {timeout_s:g} s; try a narrower range or fewer lines.")
    except ToolError as exc:
        return ToolResult("error", str(exc))
    except Exception as exc:  # the single place where a tool's unexpected failure becomes an observation
        log.warning("tool %s failed: %s", name, exc, exc_info=log.isEnabledFor(logging.DEBUG))
        return ToolResult("error", f"{name} failed: {type(exc).__name__}: {exc}")
    if isinstance(out, ToolResult):
        return out
    return ToolResult("ok", out) if out.strip() else ToolResult("no_data", f"{name} returned no data.")
