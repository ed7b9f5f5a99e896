"""query_deploy_records and query_deploy_diff: what changed, when, by whom, from any DeploySource.

The sources (tools/deploys/registry.py lists them): a git repository (tools/deploys/git/: tags, or GitOps commits
to service folders), an Elasticsearch deploy-events index, the GitHub Deployments API, Argo CD's application
history, Kubernetes rollout history. Every source is read through tools/deploys/filters.py, which drops the deploys
of other environments and failed ones and says so. The records, the tools' results and the text the model reads,
rendered from them, are in tools/deploys/records.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from tools.analysis.configdiff import key_changes_from_diff, risky_lines_from_diff
from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.choices import CachedNames, choice_or_error
from tools.deploys.records import (
    CodeChanges,
    DeployDiff,
    DeployList,
    DeployRecord,
    DiffReport,
    render_deploys,
    render_diff,
    with_rollbacks,
)
from tools.timerange import Clock, utc_now, window_from_args

if TYPE_CHECKING:  # the code sources read versions as the git source does (tools/deploys/git imports this module)
    from tools.deploys.appcode import CodeSource

__all__ = [
    "DeployDiff",
    "DeployList",
    "DeployRead",
    "DeployRecord",
    "DeploySource",
    "DeployTools",
    "DiffReport",
    "Finding",
    "files_from_diff",
    "render_deploys",
    "render_diff",
]

SERVICE_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
# Strict on purpose: no "/", no leading "-" (git option injection), no ".." (ranges, traversal), no spaces.
# "@" for configuration-only deploys (config@abc1234).
VERSION_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+@-]{0,63}$")
MAX_RECORDS = 50
LISTED_VERSIONS = 20


@dataclass(frozen=True)
class DeployRead:
    """The deploys a source found in a window, newest first, and what it left out or could not tell, and why."""

    records: tuple[DeployRecord, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    """One thing learnt or checked about a deploy source, with its evidence: `opsbot init` writes the setting,
    `opsbot doctor` fails on a finding that is not ok and shows the suggestion."""

    setting: str  # the setting it is about, as the config file names it: "deploys.service_path"
    value: str  # the value found, or the value checked
    evidence: str  # what shows it: counts, examples, what matched and what did not
    ok: bool = True
    suggestion: str = ""  # "did you mean ..." when a value would work better


class DeploySource(Protocol):
    """A read-only record of deploys."""

    def services(self) -> list[str]:
        """Every service with at least one deploy."""
        ...

    def read(self, service: str | None, start: datetime, end: datetime) -> DeployRead:
        """Deploys in [start, end), newest first, with notes on what was left out; service None = every service."""
        ...

    def records(self, service: str | None, start: datetime, end: datetime) -> list[DeployRecord]:
        """Deploys in [start, end), newest first; service None = every service."""
        ...

    def versions(self, service: str) -> list[str]:
        """The service's deployed versions, newest first."""
        ...

    def diff(self, service: str, version: str, environments: Sequence[str] = ()) -> DeployDiff | None:
        """The change a deploy shipped (in one of `environments` when the version went to several); None when the
        service has no such version."""
        ...

    def describe(self) -> str:
        """Where the deploy records come from, for messages."""
        ...

    def check(self) -> list[Finding]:
        """What the source's settings match in the backend (a pattern that matches nothing is a finding not ok)."""
        ...


class ReadsDeploys:
    """What every source shares: `records` is `read` without its notes; a source with nothing to check says so."""

    def read(self, service: str | None, start: datetime, end: datetime) -> DeployRead:
        raise NotImplementedError

    def records(self, service: str | None, start: datetime, end: datetime) -> list[DeployRecord]:
        """Deploys in [start, end), newest first."""
        return list(self.read(service, start, end).records)

    def check(self) -> list[Finding]:
        """Nothing beyond reading deploys (doctor reads them per service)."""
        return []


def files_from_diff(diff: str) -> tuple[str, ...]:
    """Paths named by `diff --git a/... b/...` headers."""
    return tuple(dict.fromkeys(re.findall(r"^diff --git a/\S+ b/(\S+)$", diff, flags=re.MULTILINE)))


class DeployTools:
    """The deploy tools over one DeploySource; with a CodeSource, an image bump's diff shows the application's
    commits between the two tags."""

    def __init__(
        self,
        source: DeploySource,
        *,
        max_diff_chars: int = 6_000,
        services_ttl_s: float = 60.0,
        clock: Clock = utc_now,
        code: CodeSource | None = None,
    ) -> None:
        self.source = source
        self.code = code
        self.max_diff_chars = max_diff_chars
        self.clock = clock
        self._services = CachedNames(source.services, services_ttl_s)

    def specs(self) -> list[ToolSpec]:
        """query_deploy_records and query_deploy_diff."""
        diff_doc = _DIFF_DOC.format(max_chars=f"{self.max_diff_chars:,}")
        return [
            tool(self.query_deploy_records, description=_RECORDS_DOC.format(max_records=MAX_RECORDS)),
            tool(self.query_deploy_diff, description=diff_doc),
        ]

    def query_deploy_records(
        self,
        service: str,
        start: str = "",
        end: str = "",
        range: str = "24h",
    ) -> ToolResult:
        """Run query_deploy_records (the description shown to the model is _RECORDS_DOC)."""
        name = self._service_or_all(service)
        window = window_from_args(range, start, end, self.clock())
        read = self.source.read(name, window.start, window.end)
        records = with_rollbacks(read.records)
        found = DeployList(name, window, tuple(records[:MAX_RECORDS]), len(records), notes=read.notes)
        if not records:
            found = self._with_latest_before(found)
        return ToolResult("ok" if records else "no_data", render_deploys(found), found)

    def query_deploy_diff(
        self,
        version: str,
        service: str,
    ) -> ToolResult:
        """Run query_deploy_diff (the description shown to the model is _DIFF_DOC)."""
        name = self._known_service(service)
        wanted = version.strip().removeprefix(f"{name}/")
        if not VERSION_RX.match(wanted) or ".." in wanted:
            raise ToolError(f"invalid version {version!r}; use a version as listed, e.g. {self._example(name)}.")
        found = self.source.diff(name, wanted)
        if found is None:
            known = self.source.versions(name)
            choice_or_error(
                wanted, known[:LISTED_VERSIONS] if wanted not in known else [], "version", f"{name} deploys"
            )
            raise ToolError(f"no diff is recorded for {name}/{wanted}.")
        report = diff_report(found, self.max_diff_chars)
        if self.code is not None:
            report = replace(report, code=_code_of(self.code, found))
        return ToolResult("ok", render_diff(report), report)

    def _with_latest_before(self, found: DeployList) -> DeployList:
        try:
            earlier = self.source.records(found.service, datetime(1970, 1, 1, tzinfo=UTC), found.window.start)
        except ToolError as exc:  # the window itself was read; only the look further back failed
            return replace(found, earlier_error=str(exc))
        return replace(found, latest_before=earlier[0] if earlier else None)

    def _service_or_all(self, service: str) -> str | None:
        return None if service.strip() in ("*", "") else self._known_service(service)

    def _known_service(self, service: str) -> str:
        name = service.strip()
        if not SERVICE_RX.match(name):
            raise ToolError(f"invalid service name {service!r}; known: {', '.join(self._services.get())}.")
        return choice_or_error(name, self._services.get(), "service", self.source.describe())

    def _example(self, service: str) -> str:
        versions = self.source.versions(service)
        return versions[0] if versions else "v1.2.3"


def _code_of(code: CodeSource, found: DeployDiff) -> CodeChanges | None:
    """The application's commits between the two image tags; None when the deploy kept its image."""
    from tools.deploys.appcode import image_change

    bump = image_change(found)
    return code.changes(found.record.service, *bump) if bump is not None else None


def diff_report(found: DeployDiff, max_chars: int) -> DiffReport:
    """The diff as the model reads it (`index` lines dropped, cut at `max_chars` on a line end) and what it changed."""
    # `index abc..def 100644` lines carry no meaning for a diagnosis; drop them to save tokens.
    diff = "\n".join(line for line in found.diff.strip("\n").splitlines() if not line.startswith("index "))
    shown = diff[:max_chars].rsplit("\n", 1)[0] if len(diff) > max_chars else diff
    whole = found.key_changes is not None  # read from both versions of each file: complete even when the text is cut
    changes = found.key_changes if found.key_changes is not None else tuple(key_changes_from_diff(shown))
    risky = tuple(risky_lines_from_diff(shown))
    return DiffReport(found.record, shown, len(diff), tuple(changes), risky, found.notes, whole)


_RECORDS_DOC = """\
Deploys (releases) in a time window, newest first.
Use it once you know WHEN a symptom started, for what was deployed just before; read a suspect with \
query_deploy_diff. Another service's deploy matters only if it touches the failing service or its dependencies.
Legal values:
- service: as the deploy records name it; "*" = all
- range: <n>m|h|d ending at end (or now), or ISO "start/end"
- start, end: ISO 8601 UTC instead of range (2026-11-28T14:00Z); empty end = now
Returns one line per deploy (time, service/version, previous version, author, summary, files; environment, \
status, rollout start → finish, rollback and restart where recorded), at most {max_records}, then notes on \
what was left out: other environments, failed deploys, commits outside every service folder."""

_DIFF_DOC = """\
What one deploy changed: the diff of the service's folder (config and code) against the previous deploy.
Use it after query_deploy_records named a suspect version, for the exact setting or code that changed.
Legal values: version as query_deploy_records lists it, e.g. v1.4.0 or config@3f2a9c1 (an unknown one gets the \
known ones back); service: the version's service.
Returns a header (time, author, summary, files), the changed keys with their full paths (old → new), when the \
deploy changed an image tag the application's commits between the two tags (subject, author, files; newest \
first), and the diff, cut at {max_chars} characters."""
