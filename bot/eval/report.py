"""An eval run's report, rendered as JSON for the trace store's eval history and as a fixed-width table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bot.eval.scoring import CaseResult


@dataclass(frozen=True)
class EvalReport:
    run_id: str
    started_at: str
    mode: str  # "playbook" | "model"
    model: str
    results: tuple[CaseResult, ...]
    scenario_set: str = "suite"  # "suite", "heldout", or the folder of a team's own scenarios

    @property
    def hits(self) -> int:
        return sum(r.hit for r in self.results)

    @property
    def evidence_hits(self) -> int:
        return sum(r.evidence_hit for r in self.results)


def report_to_dict(report: EvalReport) -> dict[str, Any]:
    """JSON-ready report with per-scenario rows and totals (what the trace store keeps)."""
    rows = []
    for r in report.results:
        row = asdict(r)
        row["format_error_rate"] = round(r.format_error_rate, 3)
        row["tool_error_rate"] = round(r.tool_error_rate, 3)
        rows.append(row)
    return {
        "run_id": report.run_id,
        "started_at": report.started_at,
        "mode": report.mode,
        "model": report.model,
        "scenario_set": report.scenario_set,
        "scenarios": rows,
        "totals": _totals(report.results),
    }


def _totals(results: Sequence[CaseResult]) -> dict[str, Any]:
    steps = sum(r.steps for r in results)
    tool_calls = sum(r.tool_calls for r in results)
    tool_errors = sum(r.tool_errors for r in results)
    return {
        "scenarios": len(results),
        "hits": sum(r.hit for r in results),
        "hit_rate": round(sum(r.hit for r in results) / len(results), 3) if results else 0.0,
        "headline_hits": sum(r.hit for r in results),
        "evidence_hits": sum(r.evidence_hit for r in results),
        "evidence_hit_rate": round(sum(r.evidence_hit for r in results) / len(results), 3) if results else 0.0,
        "steps": steps,
        "prompt_tokens": sum(r.prompt_tokens for r in results),
        "completion_tokens": sum(r.completion_tokens for r in results),
        "wall_s": round(sum(r.wall_s for r in results), 2),
        "format_error_rate": round(sum(r.format_errors for r in results) / steps, 3) if steps else 0.0,
        "tool_error_rate": round(tool_errors / tool_calls, 3) if tool_calls else 0.0,
        "tool_errors": tool_errors,
        "tool_errors_corrected": sum(r.tool_errors_corrected for r in results),
        "unverified": sum(len(r.unverified) for r in results),
    }


_COLUMNS = (
    "scenario",
    "headline",
    "evidence",
    "steps",
    "stop",
    "tokens in/out",
    "wall s",
    "fmt err",
    "tool err (fixed)",
    "unverified",
)


def report_to_table(report: EvalReport) -> str:
    """A fixed-width table, one row per scenario plus the total, then the misses explained."""
    rows = [_row(r) for r in report.results]
    t = _totals(report.results)
    rows.append(
        (
            "TOTAL",
            f"{t['hits']}/{t['scenarios']}",
            f"{t['evidence_hits']}/{t['scenarios']}",
            str(t["steps"]),
            "",
            f"{t['prompt_tokens']}/{t['completion_tokens']}",
            f"{t['wall_s']:.1f}",
            f"{t['format_error_rate']:.0%}",
            f"{t['tool_error_rate']:.0%} ({t['tool_errors_corrected']}/{t['tool_errors']})",
            str(t["unverified"]),
        )
    )
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(_COLUMNS)]
    lines = [
        f"eval {report.mode}{' ' + report.model if report.model else ''} · {report.scenario_set} · "
        f"run {report.run_id[:8]} · headline = the named cause (strict), evidence = anywhere in the answer"
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in (_COLUMNS, *rows)]
    for r in report.results:
        if not r.hit:
            lines.append(f"miss {r.scenario}: {miss_reason(r)}")
        if r.unverified:
            lines.append(f"unverified in {r.scenario}: {', '.join(r.unverified)}")
    return "\n".join(lines)


def miss_reason(r: CaseResult) -> str:
    """Why a result is a miss: the run's error, the facts its headline lacks, the decoys it blames."""
    if r.error:
        return r.error
    reasons = [f"headline misses: {', '.join(r.missing)}"] if r.missing else []
    reasons += [f"headline blames the decoy {', '.join(r.blamed)}"] if r.blamed else []
    return "; ".join(reasons) or "did not say there is no incident"


def _row(r: CaseResult) -> tuple[str, ...]:
    return (
        r.scenario,
        "yes" if r.hit else "NO",
        "yes" if r.evidence_hit else "NO",
        str(r.steps),
        r.stop_reason,
        f"{r.prompt_tokens}/{r.completion_tokens}",
        f"{r.wall_s:.1f}",
        f"{r.format_error_rate:.0%}",
        f"{r.tool_error_rate:.0%} ({r.tool_errors_corrected}/{r.tool_errors})",
        str(len(r.unverified)),
    )


def runs_to_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """Stored eval runs, newest first, one line each: the history `opsbot eval --history` compares."""
    lines = [
        f"{'run':<10} {'started':<20} {'mode':<9} {'set':<8} {'model':<24} {'hits':>7} {'steps':>6} "
        f"{'tokens':>9} {'unverified':>10}"
    ]
    for run in runs:
        t = run.get("totals", {})
        hits = f"{t.get('hits', 0)}/{t.get('scenarios', 0)}"
        tokens = int(t.get("prompt_tokens", 0)) + int(t.get("completion_tokens", 0))
        lines.append(
            f"{str(run.get('run_id', ''))[:8]:<10} {str(run.get('started_at', ''))[:19]:<20} "
            f"{run.get('mode', ''):<9} {str(run.get('scenario_set', 'suite'))[:8]:<8} "
            f"{(run.get('model') or '-')[:24]:<24} {hits:>7} {t.get('steps', 0):>6} "
            f"{tokens:>9,} {t.get('unverified', 0):>10}"
        )
    return "\n".join(lines) if runs else "no eval runs stored yet: run `opsbot eval`"
