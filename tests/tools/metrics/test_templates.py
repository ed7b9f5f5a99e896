"""PromQL templates: the placeholders opsbot substitutes, the `$` it leaves to PromQL, and what is found broken."""

from __future__ import annotations

import pytest

from tools.metrics.catalogue import ServiceCatalogue, catalogue_problems, render, template_problems
from tools.metrics.series import MetricQuery


def test_both_placeholder_forms_are_substituted_and_promql_dollars_are_left_alone():
    template = 'label_replace(sum by (${label}) (up{$label="$service"}), "x", "$1", "${label}", "(.*)")'
    assert render(template, label="application", service="order") == (
        'label_replace(sum by (application) (up{application="order"}), "x", "$1", "application", "(.*)")'
    )


def test_a_template_with_label_replace_groups_has_no_problem():
    template = 'label_replace(rate(x_total{$label="$service"}[5m]), "code", "$1", "status", "(.)..")'
    assert template_problems(template) == []


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ('sum(rate(x_total{$label="$servce"}[5m]))', "unknown placeholder $servce (did you mean '$service'?)"),
        ('sum by ($lable) (x{$lable="$service"})', "unknown placeholder $lable (did you mean '$label'?)"),
        ('sum(rate(x_total{$label="$service"}[5m])', "1 bracket(s) never closed: ("),
        ('sum(rate(x_total{$label="$service"}[5m])))', "the ')' at character 42 closes nothing"),
        ('sum(x{$label="$service})', "a string that starts at character 14 never ends"),
        ("sum(rate(x_total[5m]))", "the template never names $service, so every service would get the same series"),
        ("  ", "the PromQL template is empty"),
    ],
)
def test_a_broken_template_names_what_is_wrong(template: str, problem: str):
    assert problem in " | ".join(template_problems(template))


def test_a_services_own_template_may_name_it_literally_but_not_measure_an_unknown_metric():
    catalogue = {"qps": MetricQuery('sum(rate(x_total{$label="$service"}[5m]))', "rps")}
    own = ServiceCatalogue(
        "app_kubernetes_io_name",
        {"qps": MetricQuery('sum(rate(y_total{app_kubernetes_io_name="inventory"}[5m]))', "rps")},
        frozenset({"gc_pauses"}),
    )
    assert catalogue_problems(catalogue, {"inventory": own}) == {
        "inventory/gc_pauses": ["not_measured names 'gc_pauses', which the catalogue does not have"]
    }
