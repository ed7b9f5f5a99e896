"""Mentions over replicas (run on demand: `pytest tests/bench/bench_replicas.py -s`). It prints numbers.

200 @mentions in 60 s, spread evenly, each delivered to one replica in turn, and every 5th also re-delivered
to the other replica as Slack's retry would be. Two real `opsbot serve` processes share one real redis-server;
then the same load against one replica, and against two replicas without Redis (the retries to the other
replica are then answered twice: that is what the shared dedupe is for). Checked: every delivery acked (HTTP
200 within Slack's 3 s), exactly one answer per mention with Redis (no duplicate), none lost (every mention
answered). An answer is a chat stream stopped in the mention's thread, or a "queued" notice there edited into the
answer (a job that waited answers in its notice, not in a stream). Printed: ack p50/p99/max and the throughput
(answers per minute from the first mention to the last answer), 1 replica next to 2.

Then the takeover: 4 diagnoses running on one replica, which is killed with SIGKILL; the other replica takes them
over. Printed per job: seconds from the kill to the first message the survivor posts in the job's thread (the job is
taken over) and to its answer, next to the lease after which a dead replica's job may be claimed
(OPSBOT_REDIS__CLAIM_IDLE_S); duplicates and lost jobs are counted.

The Slack stand-in answers every call after SLACK_LATENCY_S, as Slack does on a normal day.
"""

from __future__ import annotations

import os
import signal
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
SLACK_LATENCY_S = 0.15
TAKEOVER_JOBS = 4
TAKEOVER_LLM_S = 6.0  # long enough that every job is mid-run when its replica is killed
CLAIM_IDLE_S = 2.0
MOVED = "continues in a new message"  # a taken-over job's old progress message, closed: not an answer


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
        if (
            c.method == "chat.stopStream"
            or (c.method == "chat.update" and not str(c.params.get("text", "")).startswith("Diagnosing…"))
        )
        and MOVED not in str(c.params)
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
    fake_slack.latency_s = SLACK_LATENCY_S
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


def _health(url: str) -> dict[str, object]:
    import requests

    try:
        return dict(requests.get(f"{url}/readyz", timeout=2).json())
    except (requests.RequestException, ValueError):
        return {}


def _first_in_thread_after(fake: FakeSlackAPI, thread: str, after_s: float) -> float | None:
    """When the first message was posted (or a stream started) in `thread` after `after_s` (monotonic)."""
    with fake._changed:
        times = [
            c.at_s
            for c in fake.calls
            if c.method in ("chat.postMessage", "chat.startStream")
            and str(c.params.get("thread_ts")) == thread
            and c.at_s > after_s
        ]
    return min(times) if times else None


def _answered_at(fake: FakeSlackAPI) -> dict[str, float]:
    """The moment each thread got its final answer (the first one, when there were several)."""
    with fake._changed:
        calls = [c for c in fake.calls if c.response]
    thread_of = {
        str(c.response.get("ts")): str(c.params.get("thread_ts"))
        for c in calls
        if c.method in ("chat.startStream", "chat.postMessage")
    }
    done: dict[str, float] = {}
    for c in calls:
        final = c.method == "chat.stopStream" or (
            c.method == "chat.update" and not str(c.params.get("text", "")).startswith("Diagnosing…")
        )
        thread = thread_of.get(str(c.params.get("ts")), "?")
        if final and MOVED not in str(c.params) and thread not in done:
            done[thread] = c.at_s
    return done


@pytest.mark.bench
def test_kill_9_of_a_replica_running_4_diagnoses(
    request: pytest.FixtureRequest, start_replica: StartReplica, fake_slack: FakeSlackAPI, slow_llm: ScriptedLLM
) -> None:
    slow_llm.responder = lambda body: {**tool_then_answer(body), "delay_s": TAKEOVER_LLM_S / 2}
    fake_slack.latency_s = SLACK_LATENCY_S
    redis_url = str(request.getfixturevalue("redis_url"))
    env = {"OPSBOT_SLACK__WORKERS": str(TAKEOVER_JOBS), "OPSBOT_REDIS__CLAIM_IDLE_S": str(CLAIM_IDLE_S)}
    victim = start_replica(redis_url, **env)
    threads = [f"1700000100.{n:06d}" for n in range(TAKEOVER_JOBS)]
    for n, ts in enumerate(threads):
        body = event_body(mention_event(f"why is order slow since 15:1{n}?", ts=ts), event_id=f"EvTake{n}")
        assert post_event(f"{victim.url}/slack/events", body).status_code == 200
    deadline = time.monotonic() + 60
    while _health(victim.url).get("workers_busy") != TAKEOVER_JOBS:
        assert time.monotonic() < deadline, "the 4 jobs never ran on the first replica"
        time.sleep(0.1)
    survivor = start_replica(redis_url, **env)  # started now, so every job ran on the victim
    time.sleep(1.0)  # mid-run: the first model reply is still TAKEOVER_LLM_S / 2 away
    killed_at = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    victim.process.wait(10)
    deadline = time.monotonic() + 180
    while len(_answered_at(fake_slack)) < TAKEOVER_JOBS and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(TAKEOVER_LLM_S)  # a late duplicate would show up here
    answered = _answered_at(fake_slack)
    taken = [_first_in_thread_after(fake_slack, ts, killed_at) for ts in threads]
    take_s = sorted(t - killed_at for t in taken if t is not None)
    answer_s = sorted(answered[ts] - killed_at for ts in threads if ts in answered)
    finals = _answers(fake_slack)
    duplicates = sum(n - 1 for n in finals.values() if n > 1)
    print(
        f"\ntakeover after kill -9 (lease {CLAIM_IDLE_S:g} s, LLM {TAKEOVER_LLM_S:g} s a run, Slack "
        f"{SLACK_LATENCY_S * 1000:.0f} ms a call): {len(take_s)}/{TAKEOVER_JOBS} taken over, "
        f"first post in the thread after {', '.join(f'{t:.1f}' for t in take_s)} s; "
        f"answered {len(answer_s)}/{TAKEOVER_JOBS} after {', '.join(f'{t:.1f}' for t in answer_s)} s; "
        f"duplicates {duplicates}; survivor answered {survivor.log().count('answered trace_id=')}"
    )
    assert len(answer_s) == TAKEOVER_JOBS and duplicates == 0
