"""A gate never ends in silence: when one stops the loop, the model is asked once more, without tools, for a
partial conclusion from the observations so far. If that fails too, the answer is built from the observations.
Either way the answer opens with a visible "Partial answer" label that says why the run stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.engine.attempts import failed_attempt_notes
from bot.engine.context import ContextLimits, call_text, question_text, step_to_line, steps_as_text
from bot.engine.guards import STOP_TEXT, counted_steps
from bot.engine.llm import LLM
from bot.engine.prompts import load_prompt
from bot.engine.protocol import split_final
from bot.engine.run import Run
from bot.engine.text.echo import OBSERVATIONS_HEADING, echoed_text
from bot.engine.types import Budget, Step, StopReason

log = logging.getLogger(__name__)

PARTIAL_LABEL = "Partial answer"
CONCLUSION_GRACE_S = 10.0  # the conclusion's time when the budget is spent: one short call, no retry wait
CONCLUSION_MIN_TOKENS = 256  # even past the token budget, room for a few lines
CONCLUSION_MAX_TOKENS = 1_024


def stop_detail(reason: StopReason, run: Run, budget: Budget) -> str:
    """The numbers behind a stop, for the label: "8 of 8 steps used", "33,120 of 32,000 tokens used"..."""
    steps = run.steps
    details = {
        StopReason.MAX_STEPS: f"{counted_steps(steps)} of {budget.max_steps} steps used",
        StopReason.TIME_BUDGET: f"{run.elapsed_s:.0f} s used of {budget.time_budget_s:g} s",
        StopReason.TOKEN_BUDGET: f"{run.tokens_used:,} tokens used of {budget.token_budget:,}",
        StopReason.REPEATED_ACTION: f"it asked again for {call_text(steps[-1])}" if steps else "",
        StopReason.FORMAT_ERRORS: f"{budget.max_format_errors} unreadable replies in a row",
        StopReason.LLM_UNAVAILABLE: next((n for n in reversed(run.notes) if n.startswith("LLM unavailable")), ""),
    }
    return details.get(reason, "")


def partial_label(reason: StopReason, detail: str) -> str:
    """The first line of every partial answer."""
    why = f"{STOP_TEXT[reason]} ({detail})" if detail else STOP_TEXT[reason]
    return f"{PARTIAL_LABEL}: the investigation stopped because {why}. This is not a confirmed root cause."


def conclude(run: Run, llm: LLM, reason: StopReason, budget: Budget, limits: ContextLimits) -> str:
    """The labelled partial answer: the model's conclusion without tools, or one built from the observations."""
    detail = stop_detail(reason, run, budget)
    label = partial_label(reason, detail)
    if reason is StopReason.LLM_UNAVAILABLE:  # the SDK already retried (or no retry fitted): asking again adds delay
        return f"{label}\n\n{answer_from_observations(run.steps, f'The LLM was unavailable: {detail}.')}"
    if not any(s.action and s.action != "finish" for s in run.steps):  # no observation: nothing to conclude from
        return f"{label}\n\n{answer_from_observations(run.steps, '')}"
    system = load_prompt("conclude", reason=f"{STOP_TEXT[reason]} ({detail})")
    messages = [
        {"role": "system", "content": system},
        {
            "role": "user",
            "content": f"{question_text(run.question)}\n\n{OBSERVATIONS_HEADING}\n\n{steps_as_text(run.steps, limits)}",
        },
    ]
    try:  # budgeted too: the time left (a short grace when the time budget is what stopped it), the tokens left
        reply = llm.complete(
            messages,
            role="main",
            timeout_s=run.time_left_s(budget, at_least_s=CONCLUSION_GRACE_S),
            max_tokens=max(CONCLUSION_MIN_TOKENS, min(CONCLUSION_MAX_TOKENS, budget.token_budget - run.tokens_used)),
        )
    except Exception as exc:  # LLMUnavailable or a broken adapter: either way, answer from what we have
        log.warning("forced conclusion failed (trace_id=%s): %s", run.trace_id, exc)
        run.notes.extend(failed_attempt_notes(exc))
        run.notes.append(f"LLM unavailable for the conclusion: {exc}")
        preface = f"The LLM was unavailable for the conclusion: {exc}."
        return f"{label}\n\n{answer_from_observations(run.steps, preface)}"
    run.notes.extend(reply.failed_attempts)
    run.extra_prompt_tokens += reply.prompt_tokens
    run.extra_completion_tokens += reply.completion_tokens
    text = split_final(reply.content)[1]
    echoed = echoed_text(reply.content, (system,))
    if echoed or reply.finish_reason == "length":  # an echo of the prompt or a cut-off text is never shown
        why = "repeated its instructions" if echoed else "was cut off at the token limit"
        run.notes.append(f"the forced conclusion {why}: not shown" + (f" ({echoed!r})" if echoed else ""))
        return f"{label}\n\n{answer_from_observations(run.steps, f'The model conclusion {why}, so it is not shown.')}"
    return f"{label}\n\n{text}" if text else f"{label}\n\n{answer_from_observations(run.steps, '')}"


def answer_from_observations(steps: Sequence[Step], preface: str) -> str:
    """What the tools returned, one line a step, with the honest caveat that no model interpreted it."""
    ran = [s for s in steps if s.action and s.action != "finish"]
    head = f"{preface} " if preface else ""
    if not ran:
        return f"{head}No tool had run yet, so there is nothing to conclude from. Try again shortly."
    lines = "\n".join(f"- {step_to_line(step).lstrip('#')}" for step in ran)
    return (
        f"{head}This is what the tools returned so far, not interpreted by a model:\n{lines}\n\n"
        "Still unknown: the root cause. Check next: read the results above; compare the times of any metric change "
        "with deploys and error logs just before it."
    )
