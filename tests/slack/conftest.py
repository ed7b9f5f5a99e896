"""A whole Slack surface (runner + Bolt app + HTTP server) against the FakeSlackAPI."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pytest
from slack_bolt import App
from slack_sdk import WebClient

from bot.engine.types import Responder, Trace
from bot.http.server import RunningServer, health_app, route, slack_app, start_server
from bot.safety.access import Admit, allow_all
from bot.slack.delivery.budget import CallBudget
from bot.slack.delivery.progress import ProgressOptions
from bot.slack.intake.listeners import build_app, build_web_client
from bot.slack.jobs.backlog import Lanes, SlackState
from bot.slack.jobs.runner import Classify, Runner, Submission
from bot.slack.jobs.state import Job, MemoryDedupe
from tests.fakes.slack import BOT_TOKEN, SIGNING_SECRET, FakeSlackAPI, ScriptedResponder


@dataclass
class Surface:
    fake: FakeSlackAPI
    runner: Runner
    app: App
    server: RunningServer
    persisted: list[Trace] = field(default_factory=list)
    votes: list[tuple[str, str, int]] = field(default_factory=list)
    submissions: list[Submission] = field(default_factory=list)
    posts_when_persisted: list[int] = field(default_factory=list)  # chat.postMessage calls seen at each save

    @property
    def events_url(self) -> str:
        return f"{self.server.url}/slack/events"


SurfaceFactory = Callable[..., Surface]
PostChart = Callable[[WebClient, Job, Trace], bool]


def _recording_persist(
    fake: FakeSlackAPI, persisted: list[Trace], posts_seen: list[int], *, fails: bool
) -> Callable[[Trace], None]:
    """The runner's persist hook: keeps each trace and how many chat.postMessage calls Slack had seen by then."""

    def persist(trace: Trace) -> None:
        posts_seen.append(len(fake.calls_to("chat.postMessage")))
        if fails:
            raise OSError("disk full")
        persisted.append(trace)

    return persist


@pytest.fixture
def make_surface(fake_slack: FakeSlackAPI) -> Iterator[SurfaceFactory]:
    built: list[Surface] = []

    def make(
        responder: Responder | None = None,
        *,
        workers: int = 4,
        queue_size: int = 32,
        use_streaming: bool = True,
        admit: Admit = allow_all,
        persist_fails: bool = False,
        append_interval_s: float = 0.0,
        classify: Classify | None = None,
        latency_s: float = 0.0,
        budget: CallBudget | None = None,
        lanes: Lanes | None = None,
        post_chart: PostChart | None = None,
    ) -> Surface:
        persisted: list[Trace] = []
        votes: list[tuple[str, str, int]] = []
        posts_when_persisted: list[int] = []
        persist = _recording_persist(fake_slack, persisted, posts_when_persisted, fails=persist_fails)
        client = build_web_client(BOT_TOKEN, fake_slack.base_url)
        runner = Runner(
            client,
            responder or ScriptedResponder(),
            persist=persist,
            state=SlackState(MemoryDedupe(900)),
            lanes=lanes or Lanes(workers=workers, queue_size=queue_size),
            progress=ProgressOptions(
                use_streaming=use_streaming,
                update_interval_s=3.0,
                append_interval_s=append_interval_s,
                budget=budget or CallBudget({}),
                post_chart=post_chart,
            ),
            classify=classify,
        )
        fake_slack.latency_s = latency_s
        app = build_app(
            runner,
            signing_secret=SIGNING_SECRET,
            fetch_trace=runner.recent_trace,
            record_feedback=lambda trace_id, user, vote: votes.append((trace_id, user, vote)),
            admit=admit,
        )
        submissions: list[Submission] = []
        submit = runner.submit

        def recording_submit(job: Job, keys: Sequence[str] = (), admit: Admit | None = None) -> Submission:
            submissions.append(outcome := submit(job, keys, admit))
            return outcome

        runner.submit = recording_submit  # type: ignore[method-assign]
        runner.start()
        health = health_app(lambda: {"status": "ok", "mode": "http", "active": runner.active})
        server = start_server(route({"/slack/": slack_app(app), "/healthz": health}), "127.0.0.1", 0, threads=8)
        surface = Surface(fake_slack, runner, app, server, persisted, votes, submissions, posts_when_persisted)
        built.append(surface)
        return surface

    yield make
    for surface in built:
        surface.server.stop()
        surface.runner.stop(timeout_s=1)


def wait_until(condition: Callable[[], bool], timeout_s: float = 15.0, what: str = "condition") -> None:
    """Poll until `condition` holds (a wait, not a timing assertion: the timeout only stops a hung test)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
