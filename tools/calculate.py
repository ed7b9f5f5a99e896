"""Safe arithmetic for the model: ratios, percentage changes, unit conversions.

The article this project grew from evaluated the model's expressions with a JavaScript engine, which runs
whatever the model (or a log line injected into its context) writes. Here the expression is parsed with
`ast` and only numbers, arithmetic operators and a few whitelisted functions are walked; nothing is ever
evaluated as code. Sizes are bounded so `9**9**9` fails fast instead of hanging a worker.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from tools.base import ToolData, ToolError, ToolResult, ToolSpec, tool

MAX_EXPRESSION_CHARS = 500
MAX_INT_BITS = 4_096  # about 1,233 decimal digits: far beyond any SRE ratio, cheap to compute
MAX_EXPONENT = 1_000
MAX_EXPRESSIONS = 10
_SYNTAX_HINT = "use numbers, + - * / // % ** and parentheses (1180, not 1,180; no units)"

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "floor": math.floor,
    "ceil": math.ceil,
}


@dataclass(frozen=True)
class Calculation(ToolData):
    """One expression and its value (the text shows the value to 10 significant digits); `others` holds the
    further expressions of the same call, each with its value."""

    kind: ClassVar[str] = "calculation"
    expression: str
    value: int | float
    others: tuple[tuple[str, int | float], ...] = ()


def calculate(expression: str) -> ToolResult:
    """Arithmetic on numbers you observed, instead of maths in your head.

    Use it for ratios (1180 / 212), percentage change ((1180 - 212) / 212 * 100), units (1.18 * 1000: s -> ms).
    Several at once: separate them with ";" (1180 / 212; (1180 - 212) / 212 * 100), at most 10.
    Legal expression: plain numbers (1180, not 1,180), + - * / // % ** ( ), abs, round, min, max, sqrt, log,
    log10, floor, ceil; no variables or units.
    Returns one number, or one "expression = number" line per expression.
    Your first 3 calculate calls of a run do not use up a step.
    """
    text = expression.strip()
    if not text:
        raise ToolError("empty expression; send arithmetic such as (1180 - 212) / 212 * 100")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression is {len(text)} characters; the limit is {MAX_EXPRESSION_CHARS}")
    parts = [part.strip() for part in text.replace("\n", ";").split(";") if part.strip()]
    if not parts:
        raise ToolError("no expression between the separators; send arithmetic such as 1180 / 212")
    if len(parts) > MAX_EXPRESSIONS:
        raise ToolError(f"{len(parts)} expressions; at most {MAX_EXPRESSIONS} in one call")
    if len(parts) > 1:
        values = [(part, _evaluate(part)) for part in parts]
        lines = "\n".join(f"{part} = {number_to_text(value)}" for part, value in values)
        return ToolResult("ok", lines, Calculation(*values[0], others=tuple(values[1:])))
    return ToolResult("ok", number_to_text(value := _evaluate(parts[0])), Calculation(parts[0], value))


def _evaluate(text: str) -> Number:
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else "unreadable"
        raise ToolError(f"not an arithmetic expression ({reason}); {_SYNTAX_HINT}") from None
    try:
        value = _value_of(tree.body)
    except ZeroDivisionError:
        raise ToolError(f"division by zero in {text!r}") from None
    except (OverflowError, RecursionError):
        raise ToolError(f"the result of {text!r} is too large") from None
    return value


def calculate_tool() -> ToolSpec:
    """The calculate tool as the model sees it."""
    return tool(calculate)


def number_to_text(value: Number) -> str:
    """Ints as they are; floats to 10 significant digits, without a trailing `.0` for whole values."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ToolError("the result is not a finite number")
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.10g}"
    return str(value)


def _value_of(node: ast.expr) -> Number:
    """Walk only the node types arithmetic needs; anything else is refused by name."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ToolError(f"{node.value!r} is not a number; {_SYNTAX_HINT}")
        return _bounded(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _binary(node.op, _value_of(node.left), _value_of(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value_of(node.operand))
    if isinstance(node, ast.Call):
        return _call(node)
    if isinstance(node, ast.Tuple):
        raise ToolError(f"commas are not allowed outside function calls; {_SYNTAX_HINT}")
    if isinstance(node, ast.Name):
        raise ToolError(f"unknown name {node.id!r}; only numbers and {', '.join(_FUNCTIONS)} are allowed")
    raise ToolError(f"{type(node).__name__} is not allowed; {_SYNTAX_HINT}")


def _binary(op: ast.operator, left: Number, right: Number) -> Number:
    if isinstance(op, ast.Pow) and abs(right) > MAX_EXPONENT and abs(left) not in (0, 1):
        raise ToolError(f"exponent {number_to_text(right)} is too large (limit {MAX_EXPONENT})")
    return _bounded(_BINARY[type(op)](left, right))


def _call(node: ast.Call) -> Number:
    name = node.func.id if isinstance(node.func, ast.Name) else ""
    function = _FUNCTIONS.get(name)
    if function is None:
        raise ToolError(f"unknown function {name or ast.unparse(node.func)!r}; allowed: {', '.join(_FUNCTIONS)}")
    if node.keywords or not node.args:
        raise ToolError(f"{name}() takes one or more plain numbers, e.g. {name}(1180, 212)")
    args = [_value_of(arg) for arg in node.args]
    try:
        return _bounded(function(*args))
    except (TypeError, ValueError) as exc:
        shown = ", ".join(number_to_text(a) for a in args)
        raise ToolError(f"{name}({shown}) failed: {exc}") from None


def _bounded(value: Number) -> Number:
    """Refuse integers that would make the next operation slow, and complex results of odd powers."""
    if isinstance(value, complex):
        raise ToolError("the result is not a real number (fractional power of a negative number?)")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolError("the result is too large")
    return value
