"""The one loader of prompts/*.md: text files with `$name` placeholders (string.Template).

`substitute` is used on purpose: a prompt that names a value the caller did not pass fails loudly at once,
instead of sending the model a literal `$tools`. Write a literal dollar sign as `$$`.
"""

from __future__ import annotations

import functools
import re
import string
from importlib import resources

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def load_prompt(name: str, **values: object) -> str:
    """The prompt `prompts/<name>.md` with `values` substituted; KeyError when one is missing."""
    return string.Template(prompt_text(name)).substitute({key: str(value) for key, value in values.items()})


@functools.cache
def prompt_text(name: str) -> str:
    """The raw prompt file (cached; the files ship inside the package)."""
    if not _NAME.match(name):
        raise ValueError(f"invalid prompt name {name!r}: use lower_snake_case without an extension")
    return resources.files("prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")
