"""The chart of a finished diagnosis, uploaded into its thread after the answer (Slack's external upload flow).

The answer is posted first and carries a text sparkline, so nothing waits on the picture and nothing is lost when
it fails: a missing `files:write` scope, a refused or failed upload, or a chart that cannot be drawn is logged and
counted (`opsbot_chart_failures{reason}`), and the thread keeps the answer with its sparkline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, tzinfo

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackRequestError

from bot.chart.spec import chart_spec
from bot.engine.types import Trace
from bot.slack.jobs.state import Job

log = logging.getLogger(__name__)

FILENAME = "symptom.png"


@dataclass(frozen=True)
class ChartPoster:
    """Draws the chart of a trace and uploads it into the job's thread; `on_failure` hears the reason."""

    zone: tzinfo = UTC
    on_failure: Callable[[str], None] | None = None

    def __call__(self, client: WebClient, job: Job, trace: Trace) -> bool:
        spec = chart_spec(trace)
        if spec is None:
            return False
        try:
            from bot.chart.draw import render_png

            png = render_png(spec, self.zone)
        except Exception:  # a chart never costs an answer
            log.exception("chart could not be drawn trace_id=%s", trace.trace_id)
            self._failed("draw")
            return False
        try:
            client.files_upload_v2(
                channel=job.channel,
                thread_ts=job.thread_ts,
                content=png,
                filename=FILENAME,
                title=spec.panels[0].title,
                alt_txt=f"{spec.panels[0].title} over the diagnosis window, the onset and suspects marked",
            )
        except SlackApiError as exc:
            reason = str(exc.response.get("error", "") or "error")
            log.warning("chart upload refused: %s trace_id=%s (the answer keeps its sparkline)", reason, trace.trace_id)
            self._failed(reason)
            return False
        except (SlackRequestError, OSError) as exc:
            log.warning("chart upload failed: %s trace_id=%s (the answer keeps its sparkline)", exc, trace.trace_id)
            self._failed("upload")
            return False
        return True

    def _failed(self, reason: str) -> None:
        if self.on_failure is not None:
            self.on_failure(reason)
