"""Checking a model-supplied name against the values a backend really holds, with a "did you mean".

Every tool validates services (and versions) the same way, so the model learns one error shape:
`unknown service 'ordr'; known: order, payment. Did you mean 'order'?`
"""

from __future__ import annotations

import difflib
import threading
import time
from collections.abc import Callable, Sequence

from tools.base import ToolError

MAX_LISTED = 30


def choice_or_error(value: str, known: Sequence[str], kind: str = "service", where: str = "") -> str:
    """`value` if it is one of `known`; otherwise a ToolError that lists the known values."""
    name = value.strip()
    if name in known:
        return name
    listed = ", ".join(known[:MAX_LISTED]) + (", …" if len(known) > MAX_LISTED else "")
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    source = f" in {where}" if where else ""
    if not known:
        raise ToolError(f"unknown {kind} {name!r}; there are no {kind}s{source} yet.")
    raise ToolError(f"unknown {kind} {name!r}{source}; known: {listed}.{hint}")


class CachedNames:
    """A list of names fetched from a backend and reused for `ttl_s` (label values, services, versions)."""

    def __init__(self, fetch: Callable[[], Sequence[str]], ttl_s: float = 60.0) -> None:
        self._fetch = fetch
        self._ttl_s = ttl_s
        self._value: tuple[float, list[str]] | None = None
        self._lock = threading.Lock()

    def get(self) -> list[str]:
        """The cached names, fetched again when older than the TTL. Fetch errors propagate."""
        with self._lock:
            if self._value and time.monotonic() - self._value[0] < self._ttl_s:
                return self._value[1]
        names = sorted({str(n) for n in self._fetch()})
        with self._lock:
            self._value = (time.monotonic(), names)
        return names
