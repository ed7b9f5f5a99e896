"""What a deploy-events index holds, read from its mapping and its documents: which field is the time, the service,
the version, the environment and the status, how each is queried, and the values they hold (for `opsbot init`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tools.base import ToolError
from tools.deploys.indexfields import TIME_TYPES, field_use, flat_mapping
from tools.deploys.query import Finding
from tools.elastic import es_request, source_field

# The names teams give each field, most common first (ECS names included).
CANDIDATES: dict[str, tuple[str, ...]] = {
    "timestamp": ("@timestamp", "timestamp", "deployed_at", "finished_at", "created_at", "time", "date"),
    "service": ("service", "service.name", "app", "application", "app.name", "component", "project"),
    "version": ("version", "service.version", "release", "tag", "image_tag", "app.version", "revision"),
    "environment": ("environment", "env", "deployment.environment", "service.environment", "stage", "cluster"),
    "status": ("status", "state", "outcome", "event.outcome", "result", "deployment.status", "conclusion"),
    "previous_version": ("previous_version", "from_version", "replaces", "previous", "previous_release"),
    "author": ("author", "user", "user.name", "deployer", "actor", "triggered_by", "created_by"),
    "commit": ("commit", "sha", "git.commit", "commit_sha", "git_sha", "revision"),
    "summary": ("summary", "message", "description", "title", "changelog"),
    "diff": ("diff", "patch", "changes"),
}
_NEEDED = ("timestamp", "service", "version")
_SAMPLE = 200


def discover_index(client: Any, index: str) -> tuple[dict[str, object], list[Finding], list[str]]:
    """The index settings (the field of each kind), each with the mapping and values that show it, and what is
    missing (a missing environment or status field means those filters cannot apply)."""
    try:
        reply = es_request(f"reading the mapping of {index}", lambda: client.indices.get_mapping(index=index))
    except ToolError as exc:
        return {}, [Finding("deploys.index", index, str(exc), ok=False)], [f"the deploy index {index}: {exc}"]
    fields = flat_mapping(dict(reply))
    docs = _sample(client, index)
    settings: dict[str, object] = {"source": "index", "index": index}
    findings: list[Finding] = []
    missing: list[str] = []
    for kind, names in CANDIDATES.items():
        name = _pick(kind, names, fields)
        setting = f"deploys.{kind}_field"
        if name is None:
            tried = ", ".join(names[:4])
            what = "the environment filter" if kind == "environment" else "the status filter"
            consequence = f": {what} cannot apply" if kind in ("environment", "status") else ""
            missing.append(f"no {kind} field in {index} (tried {tried}, …){consequence}")
            continue
        settings[f"{kind}_field"] = name
        findings.append(Finding(setting, name, _evidence(fields, setting, name, index, docs), ok=True))
    for kind in _NEEDED:
        if f"{kind}_field" not in settings:
            findings.append(Finding(f"deploys.{kind}_field", "", f"{index} has no {kind} field", ok=False))
    return settings, findings, missing


def _pick(kind: str, names: Sequence[str], fields: Mapping[str, dict[str, Any]]) -> str | None:
    found = next((n for n in names if n in fields), None)
    if found is None and kind == "timestamp":  # any date field will do for the time
        found = next((n for n, spec in fields.items() if spec.get("type") in TIME_TYPES), None)
    return found


def _evidence(
    fields: Mapping[str, dict[str, Any]], setting: str, name: str, index: str, docs: Sequence[dict[str, Any]]
) -> str:
    use = field_use(fields, setting, name, index)
    values = [str(v) for d in docs if (v := source_field(d, name)) not in (None, "")]
    distinct = sorted(set(values))
    shown = ", ".join(distinct[:6]) + (" …" if len(distinct) > 6 else "")
    held = f"{len(distinct)} distinct values in {len(docs)} events read: {shown}" if values else "no values"
    return f"{use.describe()}; {held}"


def _sample(client: Any, index: str) -> list[dict[str, Any]]:
    try:
        reply = es_request(f"reading {index}", lambda: client.search(index=index, size=_SAMPLE))
    except ToolError:
        return []
    return [h["_source"] for h in reply["hits"]["hits"]]
