"""What `opsbot doctor` proves about the metric settings against live data, as Findings (tools/discovery.py).

Reachability is not enough: a misspelt label, a status label the services do not carry, or a service on another
label all answer "no data" and make a diagnosis silently wrong. For each service to check:
- every template parses (tools/metrics/catalogue.py);
- the service label is on some series, and holds the service (else: the label that does, if any);
- every catalogue query and every entry of the service's own table (its own where it has one, never one it does
  not measure) returns data over the last hour; when one does not, the selector that matches nothing is named: a
  metric with no series, no series of it for the service, or a matcher's label those series do not carry, each
  with a "did you mean";
- a share that reads 0 for the whole hour while its total does not is warned of (tools/metrics/zeroshare.py), with
  what its matcher's labels hold: a failing matcher that matches no value reads 0 % for ever;
- a histogram quantile that passes is warned of when its histogram's top finite bucket holds back a material share
  of the observations (tools/metrics/ceiling.py): the quantile then reads that bucket however slow the service is;
- the scrape-health metric (`prometheus.up_metric`) is there and carries the service label: its default missing is
  a warning with the fix, one the user set is a problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from tools.base import ToolError
from tools.discovery import Finding, did_you_mean, setting_key
from tools.metrics.catalogue import render
from tools.metrics.ceiling import ceiling_warning
from tools.metrics.conventions import CONVENTIONS
from tools.metrics.zeroshare import zero_share_warning

if TYPE_CHECKING:
    from tools.metrics.query import MetricsTools

WINDOW = timedelta(hours=1)
STEP = "300s"
_SELECTOR_RX = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^{}]*)\}")
_MATCHER_RX = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*\"")
_VALUE_RX = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
MAX_VALUES = 6
SERVICE_LABELS = tuple(dict.fromkeys(label for c in CONVENTIONS for label in c.service_labels))
STATUS_LABELS = tuple(dict.fromkeys(label for c in CONVENTIONS for label in c.status_labels))


def check_metrics(
    tools: MetricsTools, services: Sequence[str], now: datetime, up_metric: str = "", up_chosen: bool = False
) -> list[Finding]:
    """Problems of the templates, the labels and each service's queries; one finding per service that passes; and
    the scrape-health metric (`up_chosen`: the user set it, so a miss is a problem rather than a warning)."""
    findings = [_template_finding(tools, path, problems) for path, problems in tools.problems.items()]
    labels = set(tools.client.label_names(since=now - WINDOW))
    for service in services:
        findings += _service_findings(tools, service, labels, now)
    return [*findings, up_finding(tools, up_metric, up_chosen, now)]


def up_finding(tools: MetricsTools, up_metric: str, chosen: bool, now: datetime) -> Finding:
    """Whether the scrape-health metric is there and names the services, which tells a series that stopped from a
    scrape that stopped; its default missing is a warning with the fix, never silence."""
    setting, since = "prometheus.up_metric", now - WINDOW
    if not up_metric:
        return Finding(setting, up_metric, "")
    names = tools.client.label_values("__name__", since=since)
    if up_metric not in names:
        issue = f"Prometheus holds no {up_metric} series{did_you_mean(up_metric, names) if chosen else ''}"
    elif tools.service_label not in tools.client.label_names(match=up_metric, since=since):
        issue = f"the {up_metric} series carry no {tools.service_label!r} label"
    else:
        return Finding(setting, up_metric, "")
    text = (
        f"{issue}, so a series that stops is not told apart from a scrape that stopped (answers say 'not checked'); "
        f"set {setting} to the scrape-health metric that carries the service label, or to '' to turn the check off"
    )
    return Finding(setting, up_metric, "", (text,) if chosen else (), () if chosen else (text,))


def _template_finding(tools: MetricsTools, path: str, problems: list[str]) -> Finding:
    service, _, name = path.rpartition("/")
    if service:
        own = tools.services[service]
        query = own.metrics.get(name)
        setting = f"prometheus.services.{setting_key(service)}"
        if query is None:
            return Finding(f"{setting}.not_measured", sorted(own.not_measured), "", tuple(problems))
        return Finding(f"{setting}.metrics.{name}.promql", query.promql, "", tuple(problems))
    return Finding(f"prometheus.metrics.{name}.promql", tools.catalogue[name].promql, "", tuple(problems))


def _label_setting(tools: MetricsTools, service: str) -> tuple[str, str]:
    own = tools.services.get(service)
    if own is not None and own.label:
        return f"prometheus.services.{setting_key(service)}.service_label", own.label
    return "prometheus.service_label", tools.service_label


def _service_findings(tools: MetricsTools, service: str, labels: set[str], now: datetime) -> list[Finding]:
    setting, label = _label_setting(tools, service)
    if label not in labels:
        problem = f"no series carries the label {label!r}{did_you_mean(label, labels)}"
        return [Finding(setting, label, f"checked for {service}", (problem,))]
    if service not in tools.client.label_values(label, since=now - WINDOW):
        missing = _missing_value(tools, service, label, labels, now)
        return [Finding(setting, label, f"checked for {service}", (missing,))]
    findings, passed = [], []
    own = tools.services.get(service)
    extras = list(own.metrics) if own is not None else []  # a service's own entries are queried too
    for name in dict.fromkeys([*tools.catalogue, *extras]):
        if own is not None and name in own.not_measured:
            continue
        if f"{service}/{name}" in tools.problems or (name in tools.problems and not (own and name in own.metrics)):
            continue  # its template's own finding says what is wrong
        problem = _query_problem(tools, service, name, now)
        if problem:
            findings.append(_query_finding(tools, service, name, problem))
        else:
            passed.append(name)
    if passed:
        findings.append(Finding(setting, label, f"{service}: {', '.join(passed)} return data"))
    return findings + _ceiling_findings(tools, service, passed, now) + _zero_findings(tools, service, passed, now)


def _zero_findings(tools: MetricsTools, service: str, names: Sequence[str], now: datetime) -> list[Finding]:
    """A warning per share that reads 0 for the whole window while its total does not (tools/metrics/zeroshare.py)."""

    def check(promql: str, label: str, unit: str) -> str:
        return zero_share_warning(tools.client, promql, label, now - WINDOW, now, STEP)

    return _warnings(tools, service, names, check, "whether it reads 0 throughout")


def _ceiling_findings(tools: MetricsTools, service: str, names: Sequence[str], now: datetime) -> list[Finding]:
    """A warning per histogram quantile whose top finite bucket holds back a material share of the observations
    (tools/metrics/ceiling.py): its reading stops at that bucket, and "no change" there proves nothing."""

    def check(promql: str, label: str, unit: str) -> str:
        return ceiling_warning(tools.client, promql, unit, now - WINDOW, now)

    return _warnings(tools, service, names, check, "whether its histogram's top bucket caps the quantile")


def _warnings(
    tools: MetricsTools,
    service: str,
    names: Sequence[str],
    check: Callable[[str, str, str], str],
    what: str,
) -> list[Finding]:
    """`check(promql, label, unit)` on each catalogue entry's query for the service: a warning on the entry's
    setting for each it returns, and "<what> was not checked" where Prometheus refused it."""
    found = []
    for name in names:
        label, query = tools.query_for(service, name)
        promql = render(query.promql, label=label, service=json.dumps(service)[1:-1])
        try:
            warning = check(promql, label, query.unit)
        except ToolError as exc:
            warning = f"{what} was not checked: {exc}"
        if warning:
            setting, template = _template_of(tools, service, name)
            found.append(Finding(f"{setting}.promql", template, "", (), (f"{service}: {warning}",)))
    return found


def _missing_value(tools: MetricsTools, service: str, label: str, labels: set[str], now: datetime) -> str:
    """Where the service is, when not under its label: another label that holds it, or nowhere."""
    values = tools.client.label_values(label, since=now - WINDOW)
    elsewhere = [
        other
        for other in SERVICE_LABELS
        if other != label and other in labels and service in tools.client.label_values(other, since=now - WINDOW)
    ]
    if elsewhere:
        return (
            f"the label {label!r} has no value {service!r}; {service}'s series carry {elsewhere[0]}: set "
            f"[prometheus.services.{setting_key(service)}] service_label = {elsewhere[0]!r}"
        )
    return f"the label {label!r} has no value {service!r}{did_you_mean(service, values)}"


def _query_finding(tools: MetricsTools, service: str, name: str, problem: str) -> Finding:
    setting, promql = _template_of(tools, service, name)
    return Finding(f"{setting}.promql", promql, f"checked for {service}", (problem,))


def _template_of(tools: MetricsTools, service: str, name: str) -> tuple[str, str]:
    """The setting that holds the template a service's metric is read with, and the template."""
    own = tools.services.get(service)
    if own is not None and name in own.metrics:
        return f"prometheus.services.{setting_key(service)}.metrics.{name}", own.metrics[name].promql
    return f"prometheus.metrics.{name}", tools.catalogue[name].promql


def _query_problem(tools: MetricsTools, service: str, name: str, now: datetime) -> str:
    """ "" when every selector of the query matches the service's series with labels they carry, and the query
    returns data over the last hour; else why not, as precisely as the labels tell. A matcher on a label the series
    lack is a problem even when the query answers: `(errors or vector(0)) / requests` would read 0 % for ever."""
    label, query = tools.query_for(service, name)
    promql = render(query.promql, label=label, service=json.dumps(service)[1:-1])
    labels = _Labels(tools, now - WINDOW)
    for metric, matchers in _SELECTOR_RX.findall(promql):
        problem = labels.selector_problem(service, label, metric, matchers)
        if problem:
            return problem
    try:
        if any(s.get("values") for s in tools.client.query_range(promql, now - WINDOW, now, STEP)):
            return ""
    except ToolError as exc:
        return f"Prometheus rejected it for {service}: {exc}"
    return f"returns no data for {service} over the last hour, although each selector matches series"


class _Labels:
    """The label answers one check needs, each asked once."""

    def __init__(self, tools: MetricsTools, since: datetime) -> None:
        self.client, self.since = tools.client, since
        self._cache: dict[tuple[str, str, str], list[str]] = {}

    def _ask(self, kind: str, label: str, match: str) -> list[str]:
        key = (kind, label, match)
        if key not in self._cache:
            self._cache[key] = (
                self.client.label_names(match=match, since=self.since)
                if kind == "names"
                else self.client.label_values(label, match=match, since=self.since)
            )
        return self._cache[key]

    def selector_problem(self, service: str, label: str, metric: str, matchers: str) -> str:
        names = self._ask("values", "__name__", "")
        if metric not in names:
            return f"the metric {metric} has no series{did_you_mean(metric, names)}"
        if service not in self._ask("values", label, metric):
            return f"{metric} has no series with {label}={service!r}"
        present = set(self._ask("names", "", f'{metric}{{{label}="{service}"}}'))
        for used, _ in _MATCHER_RX.findall(matchers):
            if used not in present:
                return f"the label {used!r} is not on {service}'s {metric} series{_hint(used, present)}"
        for used, op, written in _VALUE_RX.findall(matchers):
            values = self._ask("values", used, f'{metric}{{{label}="{service}"}}') if op in ("=", "=~") else []
            wanted = re.sub(r"\\(.)", r"\1", written)  # PromQL's string escapes: "a\\.b" is the regex a\.b
            close = did_you_mean(wanted, values) if used != label and not _any_match(op, wanted, values) else ""
            if close:  # none matches yet a value is close: a typo, not a 5xx that never happened
                shown = ", ".join(values[:MAX_VALUES])
                return f'{used}{op}"{written}" matches none of {service}\'s {metric} {used} values ({shown}){close}'
        return ""


def _any_match(op: str, wanted: str, values: Sequence[str]) -> bool:
    """Whether an = or =~ matcher (anchored, as Prometheus anchors it) matches one of `values`; True when the
    regex is not one Python reads (not checked)."""
    try:
        return any(re.fullmatch(wanted, v) if op == "=~" else v == wanted for v in values)
    except re.error:
        return True


def _hint(label: str, present: set[str]) -> str:
    """A close name, or for a status label the status label the series do carry (status vs code)."""
    close = did_you_mean(label, present)
    status = next((s for s in STATUS_LABELS if s in present), "") if label in STATUS_LABELS else ""
    return close or (f" (did you mean {status!r}?)" if status else "")
