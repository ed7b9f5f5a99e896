"""What a stopping replica tells the Slack threads it will not answer: never a silent drop."""

from __future__ import annotations

import logging

from slack_sdk import WebClient

from bot.slack.delivery.marks import say, withdraw
from bot.slack.jobs.state import WorkQueue

log = logging.getLogger(__name__)

RESTARTING_TEXT = "♻️ opsbot is restarting and did not get to this question. Re-run? Ask again in a minute."


def answer_queued_restarting(client: WebClient, queue: WorkQueue) -> int:
    """Empty the queue once the workers have stopped: each waiting job is told "restarting: re-run?"."""
    told = 0
    while (job := queue.get(timeout_s=0)) is not None:
        say(client, job, RESTARTING_TEXT)
        withdraw(client, job)
        told += 1
    if told:
        log.warning("stopping: told %d queued Slack questions to re-run", told)
    return told
