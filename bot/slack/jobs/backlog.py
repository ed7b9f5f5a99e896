"""The option objects of the Slack surface's pools and what it keeps across jobs, built once by wiring.

Accepted diagnoses wait on the job runner (bot/durable/runner.py): in this process by default, or on the Redis
stream every replica reads (OPSBOT_REDIS__URL), where a job whose replica dies is taken over, with the steps it had
found, by another. The Slack side of a job is bot/slack/jobs/handover.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from bot.durable.runner import JobRunner
from bot.slack.jobs.state import Dedupe, Job, MemoryDedupe, MemoryThreadMemory, ThreadMemory
from bot.slack.jobs.steplog import StepLog

SLACK_JOBS = "slack"  # the job kind on the runner


@dataclass(frozen=True)
class Submission:
    """What became of one accepted question (`position`: its place when it had to wait)."""

    outcome: Literal["started", "queued", "answered", "asked", "duplicate", "refused", "rejected"]
    position: int = 0


@dataclass(frozen=True)
class Lanes:
    """How many threads each pool has, how many diagnoses may wait, and when the intent gate counts as unsure."""

    workers: int = 4  # diagnoses
    quick_workers: int = 8  # triage, help, chit-chat, quick lookups
    marks_workers: int = 16  # 👀, status, "queued" notices
    ask_below_confidence: float = 0.6
    queue_size: int = 32  # diagnoses waiting (for the runner built in process when SlackState has none)


@dataclass(frozen=True)
class SlackState:
    """What the Slack surface keeps across jobs: in this process by default; with Redis, dedupe and thread memory
    are shared by every replica and `jobs` is the runner on the shared stream. With `steps`, a diagnosis' steps are
    also kept in the trace store as they complete (one process: a crash keeps what was done)."""

    dedupe: Dedupe = field(default_factory=MemoryDedupe)
    memory: ThreadMemory = field(default_factory=MemoryThreadMemory)
    jobs: JobRunner | None = None  # None: a runner in this process, sized by Lanes
    steps: StepLog | None = None


def inflight_key(job: Job) -> str:
    """One run per (thread, question): an impatient repeat or a double-clicked Re-run is not a new run."""
    return "|".join((job.channel, job.thread_ts, " ".join(job.question.text.lower().split())))
