"""What discovering a team's stack, or checking a setting against it, found: one Finding per setting.

Every backend family has its discovery function (`opsbot init` calls them) and its meaning checks (`opsbot doctor`
calls them); each returns Findings of this one shape, so the command that prints them and the writer of the config
file need not know the family:
- `setting` is the dotted Settings path the finding is about ("prometheus.service_label", "logs.level_field",
  "prometheus.services.inventory.service_label", "deploys.service_path");
- `value` is what discovery chose, or, for a check, the configured value it checked; None when nothing was found
  (then it is not written, and `problems` says why);
- `evidence` is what was seen, in words a reader can verify ("application: 12 services; app_kubernetes_io_name:
  3 services");
- `problems` is what could not be found or does not hold, one line each, with a "did you mean" where a close
  candidate exists. A finding with problems fails `doctor`; init prints them as "not found".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MAX_SUGGESTIONS = 3


@dataclass(frozen=True)
class Finding:
    """One setting's discovered (or checked) value, the evidence for it, and what does not hold."""

    setting: str
    value: object
    evidence: str
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems and self.value is not None


def did_you_mean(value: str, candidates: Iterable[str]) -> str:
    """' (did you mean 'a' or 'b'?)' for the closest candidates, in any case; '' when none is close."""
    known = list(dict.fromkeys(str(c) for c in candidates))
    by_fold = {c.casefold(): c for c in known}
    close = difflib.get_close_matches(value.casefold(), list(by_fold), n=MAX_SUGGESTIONS, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(by_fold[c]) for c in close) + "?)"


def problems_of(findings: Sequence[Finding]) -> list[Finding]:
    """The findings that do not hold, in order."""
    return [f for f in findings if f.problems]
