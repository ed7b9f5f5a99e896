"""A scenario file's TOML read into a Scenario, and what is wrong with it, said in the author's terms: every
problem is one line naming the key to fix.

Authors write scenarios from the format reference alone (scenarios/README.md), so a mistake must fail loudly
when the file is loaded (`opsbot sandbox up`, `opsbot eval`), never as a sandbox that silently lacks the series
it describes.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from bot.sandbox.cluster import cluster_from_dict, cluster_problems
from bot.sandbox.deployrepo import baseline_clashes
from bot.sandbox.exporters.catalog import LABEL_KEYS, RUNTIMES, SIGNALS
from bot.sandbox.scenario import (
    LOG_FORMATS,
    METRICS,
    SHAPES,
    CodeCommit,
    Deploy,
    Effect,
    FileChange,
    LogPattern,
    Runbook,
    Scenario,
    ScenarioError,
    Service,
    incident_time,
)

LEVELS = ("ERROR", "WARN", "INFO", "DEBUG")


def scenario_from_table(data: dict[str, Any]) -> Scenario:
    """Build a Scenario from parsed TOML and check it; every problem found is in the one error."""
    deploys = tuple(
        Deploy(
            **{
                **d,
                "files": tuple(FileChange(**f) for f in d.get("files", ())),
                "commits": tuple(CodeCommit(**{**c, "files": tuple(c.get("files", ()))}) for c in d.get("commits", ())),
            }
        )
        for d in _named_config_deploys(data)
    )
    scenario = Scenario(
        name=data["name"],
        title=data["title"],
        question=data["question"],
        root_cause=data["root_cause"],
        must_name=tuple(data.get("must_name", ())),
        incident=data["incident"],
        services=tuple(service_from_table(n, s) for n, s in data["services"].items()),
        timeline=tuple(Effect(**e) for e in data.get("timeline", ())),
        deploys=deploys,
        logs=tuple(LogPattern(**p) for p in data.get("logs", ())),
        resolved_minutes=data.get("resolved_minutes"),
        expect_incident=data.get("expect_incident", True),
        noise=data.get("noise"),
        daily_amplitude=data.get("daily_amplitude"),
        kubernetes=cluster_from_dict(data.get("kubernetes")),
        runbooks=tuple(Runbook(**r) for r in data.get("runbooks", ())),
        collection_gap_minutes=data.get("collection_gap_minutes"),
        collection_gap_services=tuple(data.get("collection_gap_services", ())),
        must_not_name=tuple(data.get("must_not_name", ())),
    )
    problems = scenario_problems(scenario, data)
    if problems:
        raise ScenarioError(f"scenario {scenario.name}: " + "; ".join(problems))
    return scenario


def _named_config_deploys(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The deploys, a config-only one without a version tagged `<running version>-config.<n>`."""
    out, counts = [], dict.fromkeys(data.get("services", {}), 0)
    for raw in data.get("deploys", ()):
        service = raw.get("service", "")
        if raw.get("config_only") and "version" not in raw and service in counts:
            counts[service] += 1
            running = data["services"][service].get("version", "v1.0.0")
            raw = {**raw, "version": f"{running}-config.{counts[service]}"}
        out.append(raw)
    return out


_SERVICE_KEYS = {"p99_ms", "qps", "error_ratio", "cpu_cores", "memory_mb", "version", "kind", "downstream"}
_SERVICE_OPTIONS = {"runtime", "per_pod", "namespace", "log_format"}


def service_from_table(name: str, table: dict[str, Any]) -> Service:
    """A `[services.<name>]` table: the baselines, then opt-in signal levels and label names, then options."""
    unknown = set(table) - _SERVICE_KEYS - _SERVICE_OPTIONS - set(SIGNALS) - set(LABEL_KEYS)
    if unknown:
        raise ScenarioError(
            f"service {name}: unknown keys {sorted(unknown)}; a service takes "
            f"{sorted(_SERVICE_KEYS | _SERVICE_OPTIONS)}, the signals {sorted(SIGNALS)} "
            f"and the names {sorted(LABEL_KEYS)}"
        )
    core = {k: v for k, v in table.items() if k in _SERVICE_KEYS | _SERVICE_OPTIONS}
    return Service(
        name=name,
        **{**core, "downstream": tuple(table.get("downstream", ()))},
        signals={k: float(v) for k, v in table.items() if k in SIGNALS},
        labels={k: str(v) for k, v in table.items() if k in LABEL_KEYS},
    )


def scenario_problems(scenario: Scenario, raw: dict[str, Any]) -> list[str]:
    """Every problem of the scenario (empty when it is usable); `raw` is the parsed TOML it came from."""
    problems = _reference_problems(scenario)
    problems += _effect_problems(scenario)
    problems += _signal_problems(scenario)
    problems += _log_problems(scenario)
    problems += _deploy_problems(scenario)
    problems += baseline_clashes(scenario)
    problems += _pod_problems(scenario, raw)
    for key in ("noise", "daily_amplitude"):
        value = getattr(scenario, key)
        if value is not None and not 0 <= value < 1:
            problems.append(f"{key} {value!r} is not in [0, 1)")
    problems += [
        f"must_not_name {fact!r} is also in must_name" for fact in scenario.must_not_name if fact in scenario.must_name
    ]
    problems += [
        f"runbook file {r.file!r} is not a plain *.md name"
        for r in scenario.runbooks
        if not re.fullmatch(r"[\w.-]+\.md", r.file)
    ]
    incident_time(scenario.incident, datetime(2026, 1, 2, 12, 0))
    return problems


def _reference_problems(scenario: Scenario) -> list[str]:
    names = {s.name for s in scenario.services}
    problems = [
        f"downstream {d!r} of {s.name} is not a service"
        for s in scenario.services
        for d in s.downstream
        if d not in names
    ]
    items: tuple[Effect | Deploy | LogPattern, ...] = (*scenario.timeline, *scenario.deploys, *scenario.logs)
    problems += [
        f"{type(item).__name__.lower()} names unknown service {item.service!r}"
        for item in items
        if item.service not in names
    ]
    problems += [
        f"collection gap names unknown service {n!r}" for n in scenario.collection_gap_services if n not in names
    ]
    if scenario.kubernetes is not None:
        problems += cluster_problems(scenario.kubernetes, {s.name: s.kind for s in scenario.services})
    return problems


def _effect_problems(scenario: Scenario) -> list[str]:
    problems = []
    for effect in scenario.timeline:
        if effect.metric not in METRICS and effect.metric not in SIGNALS:
            problems.append(f"effect metric {effect.metric!r} not in {METRICS} or the signals {sorted(SIGNALS)}")
        if effect.shape not in SHAPES:
            problems.append(f"effect shape {effect.shape!r} not in {SHAPES}")
        if effect.shape == "periodic" and not 0 < effect.for_minutes < effect.every_minutes:
            problems.append(f"periodic effect on {effect.service} needs 0 < for_minutes < every_minutes")
        problems += _scope_problems(scenario, effect, f"effect on {effect.service} {effect.metric}")
    return problems


def _scope_problems(scenario: Scenario, item: Effect | LogPattern, what: str) -> list[str]:
    """on_version / on_node / on_zone need a per-pod service and must name what exists."""
    if not (item.on_version or item.on_node or item.on_zone) or item.service not in {s.name for s in scenario.services}:
        return []
    problems = [] if scenario.service(item.service).per_pod else [f"{what}: on_* needs `per_pod = true` on the service"]
    versions = {
        scenario.service(item.service).version,
        *(d.version for d in scenario.deploys if d.service == item.service),
    }
    if item.on_version and item.on_version not in versions:
        problems.append(f"{what}: on_version {item.on_version!r} is not one of {sorted(versions)}")
    if item.on_node and item.on_node not in {n.name for n in scenario.nodes}:
        problems.append(f"{what}: on_node {item.on_node!r} is not a node ({', '.join(n.name for n in scenario.nodes)})")
    if item.on_zone and item.on_zone not in {n.zone for n in scenario.nodes}:
        problems.append(f"{what}: on_zone {item.on_zone!r} is not a zone of the nodes")
    return problems


def _signal_problems(scenario: Scenario) -> list[str]:
    problems = []
    for svc in scenario.services:
        carried = scenario.carried(svc.name)
        for key in carried:
            signal = SIGNALS[key]
            if signal.default is None and key not in svc.signals:
                problems.append(f"service {svc.name}: an effect moves {key}; set its healthy level `{key} = …`")
            if signal.needs and signal.needs not in carried:
                problems.append(f"service {svc.name}: {key} needs `{signal.needs}` too")
            if signal.runtimes and svc.runtime not in signal.runtimes:
                problems.append(f"service {svc.name}: {key} needs `runtime` one of {signal.runtimes}")
        if svc.runtime not in ("", *RUNTIMES):
            problems.append(f"service {svc.name}: runtime {svc.runtime!r} is not one of {RUNTIMES}")
        if svc.log_format not in LOG_FORMATS:
            problems.append(f"service {svc.name}: log_format {svc.log_format!r} is not one of {LOG_FORMATS}")
        if svc.per_pod and svc.kind == "external":
            problems.append(f"service {svc.name}: an external service has no pods (per_pod)")
    return problems


def _log_problems(scenario: Scenario) -> list[str]:
    problems = []
    for pattern in scenario.logs:
        what = f"log pattern {pattern.message[:40]!r}"
        if pattern.level not in LEVELS:
            problems.append(f"log level {pattern.level!r}")
        if pattern.format not in ("", *LOG_FORMATS):
            problems.append(f"{what}: format {pattern.format!r} is not one of {LOG_FORMATS}")
        if pattern.every_minutes and not 0 < pattern.for_minutes < pattern.every_minutes:
            problems.append(f"{what}: needs 0 < for_minutes < every_minutes")
        problems += [f"{what}: field {k!r} is a field every document has" for k in pattern.fields if k in _DOC_FIELDS]
        problems += [
            f'{what}: field {k!r} must be text (write {k} = "{v}")'
            for k, v in pattern.fields.items()
            if not isinstance(v, str)
        ]
        problems += _scope_problems(scenario, pattern, what)
    return problems


_DOC_FIELDS = {"@timestamp", "service", "level", "message", "logger", "host", "trace_id", "stack_trace"}


def _deploy_problems(scenario: Scenario) -> list[str]:
    problems = []
    per_pod = {s.name for s in scenario.services if s.per_pod}
    for deploy in scenario.deploys:
        what = f"deploy {deploy.service} {deploy.version}"
        for change in deploy.files:
            path = PurePosixPath(change.path)
            if path.is_absolute() or ".." in path.parts or not change.path.strip():
                problems.append(f"{what}: file {change.path!r} must be a path inside services/{deploy.service}/")
        if deploy.pods is not None and deploy.service not in per_pod:
            problems.append(f"{what}: a canary (`pods`) needs `per_pod = true` on the service")
        if deploy.pods is not None and deploy.pods < 1:
            problems.append(f"{what}: pods {deploy.pods} must be at least 1")
        problems += _commit_problems(deploy, what)
    return problems


def _commit_problems(deploy: Deploy, what: str) -> list[str]:
    """A deploy's application commits need a subject and paths inside the repository, and an image to ride in."""
    if not deploy.commits:
        return []
    problems = [f"{what}: a config_only deploy ships no image, so it has no `commits`"] if deploy.config_only else []
    for commit in deploy.commits:
        if not commit.subject.strip():
            problems.append(f"{what}: every [[deploys.commits]] needs a `subject`")
        bad = [f for f in commit.files if PurePosixPath(f).is_absolute() or ".." in PurePosixPath(f).parts]
        problems += [f"{what}: commit file {f!r} must be a path inside the application repository" for f in bad]
    return problems


def _pod_problems(scenario: Scenario, raw: dict[str, Any]) -> list[str]:
    """A service's pod count is said once: `replicas` on the service, or the [[kubernetes.pods]] group's."""
    groups = {g.get("service"): g for g in (raw.get("kubernetes") or {}).get("pods", ())}
    return [
        f"service {s.name}: its pods are counted twice (`replicas` on the service and in [[kubernetes.pods]]); "
        "keep the service's"
        for s in scenario.services
        if "replicas" in s.signals and "replicas" in groups.get(s.name, {})
    ]
