"""A toolset: one backend's tools, whether it is switched on, and a prerequisites check.

The check answers one line that `opsbot toolsets`, readiness and a doctor command can show: "ok" (it answered
as expected), "warn" (it answered, but something the tools need is missing), "fail" (it did not answer), or
"off" (not configured). A check that could not run says so; it never reports "ok" by default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tools.base import ToolError, ToolSpec

ToolsetState = Literal["ok", "warn", "fail", "off"]


@dataclass(frozen=True)
class ToolsetStatus:
    name: str
    state: ToolsetState
    detail: str


class CheckWarning(Exception):
    """Raised by a check when the backend answered but is not fully usable (state "warn")."""


@dataclass(frozen=True)
class Toolset:
    """A backend's tools, built only when enabled, and its check (a one-line description, or an exception)."""

    name: str
    enabled: bool
    specs: Callable[[], list[ToolSpec]]
    probe: Callable[[], str]
    off_reason: str = "not enabled"

    def check(self) -> ToolsetStatus:
        """Run the probe: its line on success, "warn" on CheckWarning, "fail" with the error text otherwise."""
        if not self.enabled:
            return ToolsetStatus(self.name, "off", self.off_reason)
        try:
            return ToolsetStatus(self.name, "ok", self.probe())
        except CheckWarning as exc:
            return ToolsetStatus(self.name, "warn", str(exc))
        except ToolError as exc:  # already worded for a reader
            return ToolsetStatus(self.name, "fail", str(exc)[:300])
        except Exception as exc:  # a check reports every failure as one line; it never raises
            return ToolsetStatus(self.name, "fail", f"{type(exc).__name__}: {exc}"[:300])
