"""Questions opsbot asked about instead of running: "🔎 Investigate" / "Just answer", waiting for the asker's click.

Kept in this process (a click reaches the replica that asked only by chance in HTTP mode; an expired choice is
"rejected" and the user simply asks again).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict

from slack_sdk import WebClient

from bot.engine.types import Intent
from bot.slack.delivery.marks import call_quietly
from bot.slack.delivery.notices import ask_blocks, ask_text, chosen_text
from bot.slack.jobs.state import Job

PENDING_CHOICES = 500


class PendingChoices:
    """The last PENDING_CHOICES questions asked about, by choice id."""

    def __init__(self, client: WebClient) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._choices: OrderedDict[str, Job] = OrderedDict()

    def ask(self, job: Job) -> None:
        """Post the two buttons in the job's thread and remember the job under a fresh choice id."""
        choice_id = uuid.uuid4().hex
        with self._lock:
            self._choices[choice_id] = job
            while len(self._choices) > PENDING_CHOICES:
                self._choices.popitem(last=False)
        call_quietly(
            self._client,
            "chat_postMessage",
            channel=job.channel,
            thread_ts=job.thread_ts,
            text=ask_text(job.question.text),
            blocks=ask_blocks(job.question.text, choice_id),
        )

    def choose(self, choice_id: str, investigate: bool, user: str, message_ts: str) -> tuple[Job, Intent] | None:
        """The chosen job and the intent the choice stands for; None when the choice is no longer pending."""
        with self._lock:
            job = self._choices.pop(choice_id, None)
        if job is None:
            return None
        call_quietly(
            self._client,
            "chat_update",
            channel=job.channel,
            ts=message_ts,
            text=chosen_text(investigate, user),
            blocks=[],
        )
        if investigate:
            return job, Intent("diagnose", 1.0, "rules", "the user chose Investigate")
        return job, Intent("lookup", 1.0, "rules", "the user chose Just answer")
