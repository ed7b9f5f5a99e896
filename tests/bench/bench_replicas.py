"""Mentions over replicas (run on demand: `pytest tests/bench/bench_replicas.py -s`). It prints numbers.

200 @mentions in 60 s, spread evenly, each delivered to one replica in turn, and every 5th also re-delivered
to the other replica as Slack's retry would be. Two real `opsbot serve` processes share one real redis-server;
then the same load against one replica, and against two replicas without Redis (the retries to the other
replica are then answered twice: that is what the shared dedupe is for). Checked: every delivery acked (HTTP
200 within Slack's 3 s), exactly one answer per mention with Redis (no duplicate), none lost (every mention
answered). An answer is a chat stream stopped in the mention's thread, or a "queued" notice there edited into the
answer (a job that waited answers in its notice, not in a stream). Printed: ack p50/p99/max and the throughput
(answers per minute from the first mention to the last answer), 1 replica next to 2.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass

import pytest

from tests.fakes.llm import ScriptedLLM
from tests.fakes.replicas import StartReplica, tool_then_answer
from tests.fakes.slack import FakeSlackAPI, event_body, mention_event, post_event

MENTIONS = 200
SPREAD_S = 60.0
LLM_S = 2.0  # LLM time per diagnosis (two replies): 4 workers per replica answer about 2 mentions/s
SLACK_ACK_S = 3.0


@dataclass(frozen=True)
class Outcome:
    replicas: int
    acks_s: list[float]
    failed_acks: int
    answers: Counter[str]
    wall_s: float

    def print(self) -> None:
        acks = sorted(self.acks_s)
        p99 = acks[int(len(acks) * 0.99) - 1]
        duplicates = sum(n - 1 for n in self.answers.values() if n > 1)
        print(
            f"\n{self.replicas} replica(s): {len(acks)} deliveries, missed acks {self.failed_acks}, "
            f"ack p50 {statistics.median(acks) * 1000:.0f} ms p99 {p99 * 1000:.0f} ms max {acks[-1] * 1000:.0f} ms; "
            f"answered {len(self.answers)}/{MENTIONS}, duplicates {duplicates}; "
            f"{len(self.answers) / self.wall_s * 60:.0f} answers/min (wall {self.wall_s:.0f} s)"
        )


def run_load(urls: list[str], fake: FakeSlackAPI) -> Outcome:
    acks: list[float] = []
    failed = 0
    lock = threading.Lock()

    def deliver(n: int) -> None:
        nonlocal failed
        ts = f"1700000000.{n:06d}"
        body = event_body(
            mention_event(f"why is order slow since 15:05? #{n}", ts=ts, user=f"U{n % 25}"), event_id=f"EvBench{n}"
        )
        targets = [urls[n % len(urls)]] + ([urls[(n + 1) % len(urls)]] if n % 5 == 0 else [])
        for attempt, url in enumerate(targets):
            started = time.monotonic()
            status = post_event(f"{url}/slack/events", body, retry_num=attempt or None).status_code
            took = time.monotonic() - started
            with lock:
                acks.append(took)
                failed += status != 200 or took > SLACK_ACK_S

    threads = []
    start = time.monotonic()
    for n in range(MENTIONS):
        time.sleep(max(start + n * SPREAD_S / MENTIONS - time.monotonic(), 0))
        thread = threading.Thread(target=deliver, args=(n,), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(30)
    deadline = time.monotonic() + 600
    while len(_answers(fake)) < MENTIONS and time.monotonic() < deadline:  # distinct mentions answered
        time.sleep(0.5)
    wall_s = time.monotonic() - start
    time.sleep(LLM_S * 2)  # late duplicates, if any, would show up here
    answers = _answers(fake)
    return Outcome(len(urls), acks, failed, answers, wall_s)


def _answers(fake: FakeSlackAPI) -> Counter[str]:
    """Final answers per mention thread: a chat stream stopped, or a "queued" notice edited into the answer."""
    with fake._changed:  # calls and their responses, read at one moment
        calls = [c for c in fake.calls if c.response]
    thread_of = {
        str(c.response.get("ts")): str(c.params.get("thread_ts"))
        for c in calls
        if c.method in ("chat.startStream", "chat.postMessage")
    }
    finals = [
        c.params
        for c in calls
        if c.method == "chat.stopStream"
        or (c.method == "chat.update" and not str(c.params.get("text", "")).startswith("Diagnosing…"))
    ]
    return Counter(thread_of.get(str(p.get("ts")), "?") for p in finals)


@pytest.mark.bench
@pytest.mark.parametrize(("replicas", "shared"), [(2, "redis"), (1, "redis"), (2, "memory")])
def test_200_mentions_in_60_s(
    replicas: int,
    shared: str,
    request: pytest.FixtureRequest,
    start_replica: StartReplica,
    fake_slack: FakeSlackAPI,
    slow_llm: ScriptedLLM,
) -> None:
    # A tool call, then the answer (LLM_S in all): a prose reply at step 1 would read as a server that ignores
    # tools, switch the run to the text protocol and end in the playbook, which measures the fallback instead.
    slow_llm.responder = lambda body: {**tool_then_answer(body), "delay_s": LLM_S / 2}
    redis_url = str(request.getfixturevalue("redis_url")) if shared == "redis" else ""
    env = {"OPSBOT_SLACK__QUEUE_SIZE": str(MENTIONS), "OPSBOT_SLACK__WORKERS": "4"}
    urls = [start_replica(redis_url, **env).url for _ in range(replicas)]
    outcome = run_load(urls, fake_slack)
    print(f"\n[{shared}]", end="")
    outcome.print()
    assert outcome.failed_acks == 0
    assert len(outcome.answers) == MENTIONS
    if shared == "redis":  # without Redis each replica dedupes alone: a retry to the other one is answered twice
        assert max(outcome.answers.values()) == 1
