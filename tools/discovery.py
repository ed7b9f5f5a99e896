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
- `warnings` is what holds but would leave an answer short, one line each with its fix: a default setting the
  stack does not fill, a histogram that caps its quantile, series init saw and did not use. `doctor` prints each
  as a WARN; init prints and writes them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MAX_SUGGESTIONS = 3
CUTOFF = 0.75  # difflib's ratio: 'aplication' and 'application' 0.95, 'aplication' and 'action' 0.75
NEARLY = 0.1  # a second suggestion only when about as close as the best
_PART = re.compile(r'"[^"]*"|[^.]+')


@dataclass(frozen=True)
class Finding:
    """One setting's discovered (or checked) value, the evidence for it, and what does not hold."""

    setting: str
    value: object
    evidence: str
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems and self.value is not None


def did_you_mean(value: str, candidates: Iterable[str]) -> str:
    """' (did you mean 'a' or 'b'?)' for the closest candidates, in any case (those nearly as close as the best);
    '' when none is close."""
    known = list(dict.fromkeys(str(c) for c in candidates))
    by_fold = {c.casefold(): c for c in known}
    wanted = value.casefold()
    scored = [(difflib.SequenceMatcher(None, wanted, fold).ratio(), fold) for fold in by_fold]
    scored = sorted((pair for pair in scored if pair[0] >= CUTOFF), reverse=True)
    close = [fold for ratio, fold in scored if ratio >= scored[0][0] - NEARLY][:MAX_SUGGESTIONS] if scored else []
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(by_fold[c]) for c in close) + "?)"


def setting_key(part: str) -> str:
    """One part of a setting path, quoted when it holds a dot (a service named "api.v2")."""
    return f'"{part}"' if "." in part else part


def setting_parts(setting: str) -> list[str]:
    """`prometheus.services."api.v2".service_label` -> ["prometheus", "services", "api.v2", "service_label"]."""
    return [part.strip('"') for part in _PART.findall(setting)]


def problems_of(findings: Sequence[Finding]) -> list[Finding]:
    """The findings that do not hold, in order."""
    return [f for f in findings if f.problems]
