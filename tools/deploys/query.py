"""query_deploy_records and query_deploy_diff: what changed, when, by whom, from any DeploySource.

The sources live in tools/deploys/git.py (a GitOps repository, the default) and tools/deploys/elastic.py
(an Elasticsearch deploy-events index); they import this module's records, so import them from there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from tools.base import ToolError, ToolResult, ToolSpec, tool
from tools.choices import CachedNames, choice_or_error
from tools.timerange import Clock, TimeWindow, iso_z, utc_now, window_from_args

SERVICE_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
# Strict on purpose: no "/", no leading "-" (git option injection), no ".." (ranges, traversal).
VERSION_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
MAX_RECORDS = 50
LISTED_VERSIONS = 20


@dataclass(frozen=True)
class DeployRecord:
    service: str
    version: str
    at: datetime
    author: str
    summary: str
    commit: str = ""
    previous_version: str = ""
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeployDiff:
    record: DeployRecord
    diff: str  # unified diff of the service's folder against the previous deploy


class DeploySource(Protocol):
    """A read-only record of deploys."""

    def services(self) -> list[str]:
        """Every service with at least one deploy."""
        ...

    def records(self, service: str | None, start: datetime, end: datetime) -> list[DeployRecord]:
        """Deploys in [start, end), newest first; service None = every service."""
        ...

    def versions(self, service: str) -> list[str]:
        """The service's deployed versions, newest first."""
        ...

    def diff(self, service: str, version: str) -> DeployDiff | None:
        """The change a deploy shipped; None when the service has no such version."""
        ...

    def describe(self) -> str:
        """Where the deploy records come from, for messages."""
        ...


def files_from_diff(diff: str) -> tuple[str, ...]:
    """Paths named by `diff --git a/... b/...` headers."""
    return tuple(dict.fromkeys(re.findall(r"^diff --git a/\S+ b/(\S+)$", diff, flags=re.MULTILINE)))


class DeployTools:
    """The deploy tools over one DeploySource."""

    def __init__(
        self, source: DeploySource, *, max_diff_chars: int = 6_000, services_ttl_s: float = 60.0, clock: Clock = utc_now
    ) -> None:
        self.source = source
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
    ) -> ToolResult | str:
        """Run query_deploy_records (the description shown to the model is _RECORDS_DOC)."""
        name = self._service_or_all(service)
        window = window_from_args(range, start, end, self.clock())
        records = self.source.records(name, window.start, window.end)
        head = f"deploys of {name or 'every service'}, {window.describe()}"
        if not records:
            return ToolResult("no_data", f"{head}: none.{self._latest_before(name, window)}")
        shown = records[:MAX_RECORDS]
        more = f" (showing the newest {len(shown)})" if len(records) > len(shown) else ""
        lines = [f"{head}: {len(records)} found, newest first{more}"]
        return "\n".join(lines + [_record_line(r) for r in shown])

    def query_deploy_diff(
        self,
        version: str,
        service: str,
    ) -> ToolResult | str:
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
        return self._render_diff(found)

    def _render_diff(self, found: DeployDiff) -> str:
        r = found.record
        lines = [f"deploy {r.service}/{r.version} at {iso_z(r.at)} by {r.author}: {r.summary}"]
        lines.append(
            f"diff against {r.previous_version or 'the commit before it'}, files: {', '.join(r.files) or 'none'}"
        )
        # `index abc..def 100644` lines carry no meaning for a diagnosis; drop them to save tokens.
        diff = "\n".join(line for line in found.diff.strip("\n").splitlines() if not line.startswith("index "))
        if not diff:
            lines.append("(the deploy changed nothing in the service's folder)")
        elif len(diff) > self.max_diff_chars:
            cut = diff[: self.max_diff_chars].rsplit("\n", 1)[0]
            lines += [cut, f"… diff truncated: showing {len(cut):,} of {len(diff):,} characters"]
        else:
            lines.append(diff)
        return "\n".join(lines)

    def _latest_before(self, service: str | None, window: TimeWindow) -> str:
        try:
            earlier = self.source.records(service, datetime(1970, 1, 1, tzinfo=UTC), window.start)
        except ToolError as exc:  # the window itself was read; only the look further back failed
            return f" Earlier deploys could not be read: {exc}"
        if not earlier:
            return " There are no earlier deploys either."
        r = earlier[0]
        return f" The latest before it: {r.service}/{r.version} at {iso_z(r.at)}."

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


def _record_line(r: DeployRecord) -> str:
    previous = f" (from {r.previous_version})" if r.previous_version else ""
    files = ", ".join(r.files[:6]) + (f" +{len(r.files) - 6} more" if len(r.files) > 6 else "")
    commit = f"; commit {r.commit[:10]}" if r.commit else ""
    return (
        f"{iso_z(r.at)} {r.service}/{r.version}{previous} by {r.author}: {r.summary}; files: {files or 'none'}{commit}"
    )


_RECORDS_DOC = """\
Deploys (releases) in a time window, newest first.
Use it once you know WHEN a symptom started, for what was deployed just before; read a suspect with \
query_deploy_diff. Another service's deploy matters only if it touches the failing service or its dependencies.
Legal values:
- service: as the deploy records name it; "*" = all
- range: <n>m|h|d ending at end (or now), or ISO "start/end"
- start, end: ISO 8601 UTC instead of range (2026-11-28T14:00Z); empty end = now
Returns one line per deploy (time, service/version, previous version, author, summary, files), \
at most {max_records}."""

_DIFF_DOC = """\
What one deploy changed: the diff of the service's folder (config and code) against the previous deploy.
Use it after query_deploy_records named a suspect version, for the exact setting or code that changed.
Legal values: version as query_deploy_records lists it, e.g. v1.4.0 (an unknown one gets the known ones \
back); service: the version's service.
Returns a header (time, author, summary, files) and the diff, cut at {max_chars} characters."""
