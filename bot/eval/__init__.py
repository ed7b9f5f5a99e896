"""Diagnosis quality over the incident suite: score each run, report per scenario and in total.

Kept small on purpose: an eval harness must not grow bigger than the product it measures. The caller supplies
`diagnose(case) -> Trace`, which runs the full path (intent gate -> loop or playbook -> tools -> the scenario's
local backends). `case` turns a scenario into what a correct answer must say, `run` times each diagnosis,
`scoring` checks the trace against the scenario's must-name (and must-not-name) facts, `report` renders the result
as a table and as JSON for the trace store's eval history, and `clocks` runs the suite at several run clocks.
"""

from bot.eval.case import EvalCase, case_from_scenario
from bot.eval.clocks import ClocksReport, clocks_to_dict, clocks_to_table, run_clocks, spread_clocks
from bot.eval.report import EvalReport, report_to_dict, report_to_table, runs_to_table
from bot.eval.run import run_eval
from bot.eval.scoring import CaseResult, corrected_tool_errors, fact_named, normalised, says_no_incident, score_trace

__all__ = [
    "CaseResult",
    "ClocksReport",
    "EvalCase",
    "EvalReport",
    "case_from_scenario",
    "clocks_to_dict",
    "clocks_to_table",
    "corrected_tool_errors",
    "fact_named",
    "normalised",
    "report_to_dict",
    "report_to_table",
    "run_clocks",
    "run_eval",
    "runs_to_table",
    "says_no_incident",
    "score_trace",
    "spread_clocks",
]
