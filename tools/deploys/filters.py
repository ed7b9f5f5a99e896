"""Environment and status filters, the same for every deploy source: a staging release or a failed deploy is not
a production suspect, and what was left out is said in the tool's output, never dropped silently.

A deploy whose source records no environment (or no status) is kept, and the output says the filter could not
apply to it.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from tools.deploys.query import DeployRead, DeploySource, Finding, ReadsDeploys
from tools.deploys.records import DeployDiff, DeployRecord

DEFAULT_EXCLUDED_STATUSES = ("failure", "failed", "error", "errored", "cancelled", "canceled", "aborted")
_EXAMPLES = 3


@dataclass(frozen=True)
class DeployFilter:
    """Which deploys are suspects: in one of `environments` ([] = any), with a status not in `excluded_statuses`.
    Both compare without case."""

    environments: tuple[str, ...] = ()
    excluded_statuses: tuple[str, ...] = DEFAULT_EXCLUDED_STATUSES

    def split(self, records: Sequence[DeployRecord]) -> tuple[list[DeployRecord], list[str]]:
        """The records kept, and one note per reason some were left out or could not be filtered."""
        wanted = {e.lower() for e in self.environments}
        failed = {s.lower() for s in self.excluded_statuses}
        kept, elsewhere, unsuccessful, unknown_env = [], [], [], 0
        for r in records:
            if wanted and r.environment and r.environment.lower() not in wanted:
                elsewhere.append(r)
            elif r.status and r.status.lower() in failed:
                unsuccessful.append(r)
            else:
                kept.append(r)
                unknown_env += bool(wanted and not r.environment)
        notes = []
        if elsewhere:
            shown = ", ".join(f"{r.service}/{r.version} in {r.environment}" for r in elsewhere[:_EXAMPLES])
            notes.append(
                f"left out {_deploys(len(elsewhere))} outside {', '.join(self.environments)} ({shown}): "
                "not suspects there"
            )
        if unsuccessful:
            shown = ", ".join(f"{r.service}/{r.version} {r.status}" for r in unsuccessful[:_EXAMPLES])
            notes.append(f"left out {_deploys(len(unsuccessful))} that did not succeed ({shown})")
        if unknown_env:
            notes.append(f"{_deploys(unknown_env)} record no environment, so the environment filter could not apply")
        return kept, notes


class FilteredDeploys(ReadsDeploys):
    """A DeploySource read through a DeployFilter; everything else is the inner source's."""

    def __init__(self, inner: DeploySource, keep: DeployFilter) -> None:
        self.inner = inner
        self.keep = keep

    def describe(self) -> str:
        return self.inner.describe()

    def services(self) -> list[str]:
        return self.inner.services()

    def versions(self, service: str) -> list[str]:
        return self.inner.versions(service)

    def read(self, service: str | None, start: datetime, end: datetime) -> DeployRead:
        """The inner source's deploys in the window, filtered, with its notes and the filter's."""
        found = self.inner.read(service, start, end)
        kept, notes = self.keep.split(found.records)
        return DeployRead(tuple(kept), (*found.notes, *notes))

    def diff(self, service: str, version: str, environments: Sequence[str] = ()) -> DeployDiff | None:
        """Any version's diff (a user may ask about a staging one); the filter's environments come first."""
        return self.inner.diff(service, version, tuple(environments) or self.keep.environments)

    def check(self) -> list[Finding]:
        return self.inner.check()

    def check_environments(self, start: datetime, end: datetime) -> list[Finding]:
        """The environments filter against the environments the source's deploys record in the window: one that
        none records but one close to it does is a misspelling; a filter that no deploy passes leaves no suspect."""
        seen = sorted({r.environment for r in self.inner.read(None, start, end).records if r.environment})
        wanted = self.keep.environments
        if not wanted or not seen:
            return []
        folded = {e.lower() for e in seen}
        missing = [e for e in wanted if e.lower() not in folded]
        value, listed = ", ".join(wanted), ", ".join(seen)
        close = [c for e in missing for c in difflib.get_close_matches(e.lower(), sorted(folded), n=1)]
        if len(missing) == len(wanted) or close:
            evidence = f"no deploy records the environment {', '.join(missing)}; the deploys record {listed}"
            return [Finding("deploys.environments", value, evidence, ok=False, suggestion=", ".join(close))]
        return [Finding("deploys.environments", value, f"the deploys record {listed}")]

    @property
    def service_setting(self) -> str:
        """The setting that decides which services the source finds (named when a service has no deploys)."""
        return str(getattr(self.inner, "service_setting", "deploys.source"))


def _deploys(count: int) -> str:
    return f"{count} deploy{'' if count == 1 else 's'}"
