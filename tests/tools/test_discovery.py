"""The one shape every family's discovery and meaning checks return."""

from __future__ import annotations

import dataclasses

import pytest

from tools.discovery import Finding, did_you_mean, problems_of


def test_finding_is_frozen_and_ok_only_with_a_value_and_no_problem():
    chosen = Finding("prometheus.service_label", "application", "application: 12 services")
    missing = Finding("logs.level_field", None, "no field holds levels", ("no level field found",))
    broken = Finding("logs.level_field", "log.levl", "mapping of logs-*", ("log.levl is not in the mapping",))
    assert chosen.ok
    assert not missing.ok
    assert not broken.ok
    with pytest.raises(dataclasses.FrozenInstanceError):
        chosen.value = "other"  # type: ignore[misc]
    assert problems_of([chosen, missing, broken]) == [missing, broken]


def test_did_you_mean_names_the_closest_candidates_in_their_own_case():
    assert did_you_mean("aplication", ["application", "app_kubernetes_io_name", "job"]) == (
        " (did you mean 'application'?)"
    )
    assert did_you_mean("LOG.LEVEL", ["log.level", "message"]) == " (did you mean 'log.level'?)"
    assert did_you_mean("zzz", ["application"]) == ""
