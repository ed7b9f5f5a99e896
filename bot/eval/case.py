"""The eval's view of an incident scenario: the user's question and what a correct answer must say."""

from __future__ import annotations

from dataclasses import dataclass

from bot.sandbox.scenario import Scenario


@dataclass(frozen=True)
class EvalCase:
    """One scenario as the eval sees it: the user's question and what a correct answer must say."""

    name: str
    question: str
    must_name: tuple[str, ...]
    no_incident: bool = False  # the right answer is that there is no incident
    source: str = ""  # what load_scenario reads: a bundled name, "heldout/<name>" or a .toml path ("" = name)
    must_not_name: tuple[str, ...] = ()  # decoys: a headline that names one blames the wrong thing (a miss)

    @property
    def scenario_ref(self) -> str:
        return self.source or self.name


def case_from_scenario(scenario: Scenario, source: str = "") -> EvalCase:
    """The scenario's own `expect_incident = false` marks the "nothing is wrong" case (a log-only incident is one).

    `source` is where the scenario was read from when that is not its bundled name (held-out, a team's file)."""
    return EvalCase(
        scenario.name,
        scenario.question,
        scenario.must_name,
        no_incident=not scenario.expect_incident,
        source=source if source != scenario.name else "",
        must_not_name=scenario.must_not_name,
    )
