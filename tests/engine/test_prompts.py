"""The prompt loader fails loudly on a missing value; the engine's prompts all render."""

from __future__ import annotations

import pytest

from bot.engine.prompts import load_prompt


def test_missing_value_fails() -> None:
    with pytest.raises(KeyError):
        load_prompt("react_text", max_steps=8)


def test_invalid_name_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid prompt name"):
        load_prompt("../secrets")


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("react_text", {"tools": "### t", "max_steps": 8}),
        ("react_native", {}),
        ("conclude", {"reason": "the step budget was used up"}),
        ("answer_once", {"tool_rule": "Answer directly."}),
    ],
)
def test_engine_prompts_render_without_leftover_placeholders(name: str, values: dict[str, object]) -> None:
    text = load_prompt(name, **values)
    assert "$" not in text
    assert all(str(v) in text for v in values.values())
