"""calculate: safe arithmetic through ast, bounded, with errors the model can act on."""

from __future__ import annotations

import pytest

from tools.base import Toolbox, ToolError, call_tool
from tools.calculate import Calculation, calculate, calculate_tool

VALUES = [
    ("ratio", "1180 / 212", "5.566037736"),
    ("percentage_change", "(1180 - 212) / 212 * 100", "456.6037736"),
    ("seconds_to_ms", "1.18 * 1000", "1180"),
    ("bytes_to_gib", "2147483648 / 1024**3", "2"),
    ("integer_power", "2**10", "1024"),
    ("floor_division", "7 // 2", "3"),
    ("modulo", "15 % 4", "3"),
    ("unary_minus", "-(3 - 5)", "2"),
    ("whitelisted_functions", "max(abs(-3), min(1, 2), round(5.5666, 2))", "5.57"),
    ("sqrt_and_log", "sqrt(16) + log10(1000)", "7"),
    ("floor_ceil", "floor(2.7) + ceil(2.1)", "5"),
    ("tiny_float", "1e-12 * 3", "3e-12"),
    ("underscore_separators", "1_180 - 180", "1000"),
    ("one_to_a_huge_power", "1 ** 100000", "1"),
]

ERRORS = [
    ("division_by_zero", "1 / 0", "division by zero"),
    ("modulo_by_zero", "10 % 0", "division by zero"),
    ("zero_to_negative_power", "0 ** -1", "division by zero"),
    ("tower_of_powers", "9**9**9", "too large"),
    ("huge_product", "*".join(["2**1000"] * 6), "too large"),
    ("float_overflow", "10.0 ** 400", "too large"),
    ("float_infinity", "1e308 * 10", "not a finite number"),
    ("complex_result", "(-8) ** 0.5", "not a real number"),
    ("thousands_separator", "1,180 / 212", "1180, not 1,180"),
    ("names_are_refused", "x + 1", "unknown name 'x'"),
    ("builtins_are_refused", "__import__('os').system('id')", "unknown function"),
    ("unknown_function", "exp(2)", "unknown function 'exp'"),
    ("attribute_access", "(1).__class__", "not allowed"),
    ("strings_are_refused", "'a' * 3", "is not a number"),
    ("booleans_are_refused", "True + 1", "is not a number"),
    ("lambda_is_refused", "(lambda: 1)()", "unknown function"),
    ("comprehension_is_refused", "sum([x for x in range(10)])", "unknown function"),
    ("domain_error", "sqrt(-1)", "math domain error"),
    ("keyword_arguments", "round(number=1.5)", "plain numbers"),
    ("units_are_refused", "1180ms / 212ms", "not an arithmetic expression"),
    ("empty", "   ", "empty expression"),
    ("too_long", "1+" * 300 + "1", "the limit is 500"),
    ("deep_nesting", "(" * 240 + "1" + ")" * 240, "not an arithmetic expression"),
]


@pytest.mark.parametrize(("expression", "expected"), [v[1:] for v in VALUES], ids=[v[0] for v in VALUES])
def test_arithmetic_returns_one_number(expression: str, expected: str) -> None:
    assert calculate(expression).text == expected


@pytest.mark.parametrize(("expression", "reason"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_invalid_expressions_raise_a_tool_error_that_says_why(expression: str, reason: str) -> None:
    with pytest.raises(ToolError) as caught:
        calculate(expression)
    assert reason in str(caught.value)


def test_tool_spec_describes_when_to_use_it() -> None:
    spec = calculate_tool()
    assert spec.name == "calculate"
    assert "percentage change" in spec.description
    assert "Returns one number" in spec.description
    assert spec.parameters["required"] == ["expression"]
    assert spec.parameters["properties"]["expression"]["type"] == "string"


def test_calculation_runs_through_call_tool() -> None:
    result = call_tool(Toolbox([calculate_tool()]), "calculate", {"expression": "(1180 - 212) / 212 * 100"})
    assert (result.status, result.text) == ("ok", "456.6037736")


def test_invalid_expression_becomes_an_error_observation() -> None:
    result = call_tool(Toolbox([calculate_tool()]), "calculate", {"expression": "1 / (5 - 5)"})
    assert result.status == "error"
    assert result.text == "division by zero in '1 / (5 - 5)'"


def test_missing_expression_is_a_validation_observation() -> None:
    result = call_tool(Toolbox([calculate_tool()]), "calculate", {"expr": "1+1"})
    assert result.status == "error"
    assert "expression" in result.text


def test_several_expressions_in_one_call_each_get_a_line_and_their_data():
    result = calculate("1180 / 212; (1180 - 212) / 212 * 100\n1180 - 212")
    assert result.text.splitlines() == [
        "1180 / 212 = 5.566037736",
        "(1180 - 212) / 212 * 100 = 456.6037736",
        "1180 - 212 = 968",
    ]
    assert result.data == Calculation(
        "1180 / 212", 1180 / 212, others=(("(1180 - 212) / 212 * 100", (1180 - 212) / 212 * 100), ("1180 - 212", 968))
    )
    assert calculate("2 ** 10;").text == "1024"  # a trailing separator is one expression


def test_one_bad_expression_among_several_is_named_and_the_limit_holds():
    with pytest.raises(ToolError, match="division by zero in '1 / 0'"):
        calculate("1180 / 212; 1 / 0")
    with pytest.raises(ToolError, match="no expression between the separators"):
        calculate(" ; ;")
    with pytest.raises(ToolError, match="at most 10"):
        calculate(";".join(["1 + 1"] * 11))
