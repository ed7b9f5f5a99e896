"""Sending one input through one entry point of the served stack, and collecting everything that came back out.

An Outcome holds what the surface sent anywhere for that input (Slack Web API calls and the slash command's ack,
the API's JSON, the CLI's output), what the model was sent, and the backend calls it caused.
"""

from __future__ import annotations

import itertools
import json
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from typer.testing import CliRunner

from bot import wiring
from bot.cli import app as cli_app
from tests.fakes.slack import SIGNING_SECRET, event_body, mention_event, post_event, signed_headers
from tests.safety.hostile_stack import ALERT_CHANNEL, API_TOKEN, Stack
from tests.slack.conftest import wait_until

_COUNTER = itertools.count(1)
CANARY = "why is order slow since 15:05?"


@dataclass
class Outcome:
    answered: bool  # the surface answered: a diagnosis, a usage text or a reasoned refusal
    problem: str = ""  # what went wrong when it did not
    outbound: list[str] = field(default_factory=list)  # every string sent to Slack or printed by the CLI
    api: list[str] = field(default_factory=list)  # every string of the API's JSON answers
    anchors: list[str] = field(default_factory=list)  # anchors, acks and notices: texts that quote the input
    llm_requests: list[str] = field(default_factory=list)
    backend_calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)  # Slack calls asking for pings (link_names, parse=full)
    llm_cut: int | None = None  # model requests from here on belong to a canary, not to the input


Send = Callable[[Stack, str], Outcome]


@contextmanager
def recorded(stack: Stack) -> Iterator[Outcome]:
    """An Outcome filled with the Slack calls, model requests and backend calls made inside the block."""
    slack_from, llm_from, backend_from = len(stack.fake.calls), len(stack.llm.chat_requests), len(stack.backend_calls())
    outcome = Outcome(answered=False)
    yield outcome
    llm_to = outcome.llm_cut if outcome.llm_cut is not None else len(stack.llm.chat_requests)
    calls = stack.fake.calls[slack_from:]
    outcome.outbound += [leaf for c in calls for leaf in leaves(c.params)]
    outcome.flagged += [
        f"{c.method} with {flag}"
        for c in calls
        for flag in ("link_names", "parse")
        if c.params.get(flag) not in (None, False, 0, "0", "false", "none")
    ]
    outcome.anchors += [
        str(c.params.get("text", "")) for c in calls if c.method == "chat.postMessage" and not c.params.get("blocks")
    ]
    outcome.llm_requests = [json.dumps(r.body, ensure_ascii=False) for r in stack.llm.chat_requests[llm_from:llm_to]]
    outcome.backend_calls = stack.backend_calls()[backend_from:]


def leaves(value: Any) -> list[str]:
    """Every string inside a JSON-like value (keys too), so nothing hides behind JSON escaping."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in (*leaves(k), *leaves(v))]
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return []


def strict_json(outcome: Outcome, response: requests.Response) -> dict[str, Any]:
    """The response's JSON body, read strictly (NaN or Infinity is a problem); its strings join the outbound."""

    def reject(constant: str) -> None:
        raise ValueError(f"non-standard JSON constant {constant}")

    try:
        body = json.loads(response.content.decode("utf-8"), parse_constant=reject)
    except ValueError as exc:
        outcome.problem, outcome.answered = f"invalid JSON from the API: {exc}", False
        return {}
    outcome.api += leaves(body)
    return body if isinstance(body, dict) else {}


def _concluded(stack: Stack, channel: str) -> Callable[[], bool]:
    def done() -> bool:
        # The cleared status is cosmetic and the Slack call budget may skip it under a burst of cases, so the
        # final message (the stream's stop, or the edit that carries the buttons) counts as the end too.
        return any(
            (
                c.method == "assistant.threads.setStatus"
                and c.params.get("channel_id") == channel
                and c.params.get("status") == ""
            )
            or (c.method == "chat.stopStream" and c.params.get("channel") == channel)
            or (
                c.method in ("chat.update", "chat.postMessage")
                and c.params.get("channel") == channel
                and "opsbot_rerun" in str(c.params)
            )
            # help and chit-chat are one plain message on the quick lane: no buttons, no status
            or (
                c.method == "chat.postMessage"
                and c.params.get("channel") == channel
                and "opsbot_rerun" not in str(c.params)
                and "'markdown'" in str(c.params)
                and "starting…" not in str(c.params)
            )
            for c in list(stack.fake.calls)
        )

    return done


def send_mention(stack: Stack, text: str, *, dm: bool = False) -> Outcome:
    n = next(_COUNTER)
    channel = f"{'D' if dm else 'C'}H{n:05d}"

    def post(body_text: str, where: str, number: int) -> None:
        event = mention_event(body_text, ts=f"1700{number:06d}.000100", channel=where)
        if dm:
            event |= {"type": "message", "channel_type": "im", "text": body_text}
        response = post_event(f"{stack.url}/slack/events", event_body(event, event_id=f"EvH{number}"))
        assert response.status_code == 200, response.text

    with recorded(stack) as outcome:
        post(text, channel, n)
        expects_run = _expects_run(text, dm)
        if expects_run:
            wait_until(_concluded(stack, channel), timeout_s=60, what=f"the run in {channel}")
            outcome.answered = True
        else:
            _canary(stack, channel, outcome, post)
    return outcome


def _expects_run(text: str, dm: bool) -> bool:
    from bot.slack.intake.events import clean_text

    return bool(clean_text(text if dm else f"<@UBOT> {text}", "UBOT"))


def _canary(stack: Stack, channel: str, outcome: Outcome, post: Callable[[str, str, int], None]) -> None:
    """An input that starts no run is followed by a canary: Slack's one worker takes jobs in order."""
    n = next(_COUNTER)
    canary_channel = f"{channel}K"
    outcome.llm_cut = len(stack.llm.chat_requests)
    post(CANARY, canary_channel, n)
    wait_until(_concluded(stack, canary_channel), timeout_s=60, what="the canary after an ignored input")
    here = [c for c in list(stack.fake.calls) if channel in (c.params.get("channel"), c.params.get("channel_id"))]
    # An input without a request may get the usage reply (a plain message), but never a run: no stream, no
    # progress status, no 👀; the LLM side is checked through llm_cut.
    run_methods = (
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
        "assistant.threads.setStatus",
        "reactions.add",
    )
    outcome.answered = not any(c.method in run_methods for c in here)
    outcome.problem = "" if outcome.answered else "an input without a request started a run"


def send_dm(stack: Stack, text: str) -> Outcome:
    return send_mention(stack, text, dm=True)


def send_slash(stack: Stack, text: str) -> Outcome:
    n = next(_COUNTER)
    channel = f"CS{n:05d}"
    params = {
        "token": "unused",
        "team_id": "T1",
        "channel_id": channel,
        "channel_name": "incidents",
        "user_id": "U1",
        "user_name": "oncall",
        "command": "/diagnose",
        "text": text,
        "response_url": stack.fake.response_url(),
        "trigger_id": f"trig-{n}",
        "api_app_id": "A1",
    }
    raw = urllib.parse.urlencode(params, errors="surrogatepass")  # Slack sends UTF-8; a lone surrogate cannot be
    headers = signed_headers(raw, content_type="application/x-www-form-urlencoded", secret=SIGNING_SECRET)
    with recorded(stack) as outcome:
        response = requests.post(f"{stack.url}/slack/events", data=raw.encode(), headers=headers, timeout=30)
        outcome.outbound.append(response.text)
        outcome.anchors.append(response.text)
        if response.status_code != 200:
            outcome.problem = f"slash command got HTTP {response.status_code}"
            return outcome
        if "On it" in response.text:  # the ack of an accepted request (a refusal or the usage says otherwise)
            wait_until(_concluded(stack, channel), timeout_s=60, what=f"the /diagnose run in {channel}")
        outcome.answered = True
    return outcome


def _api(stack: Stack, path: str, body: dict[str, Any] | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {API_TOKEN}", "Content-Type": "application/json"}
    if body is None:
        return requests.get(f"{stack.url}{path}", headers=headers, timeout=60)
    return requests.post(f"{stack.url}{path}", data=json.dumps(body).encode(), headers=headers, timeout=90)


def send_api(stack: Stack, text: str) -> Outcome:
    with recorded(stack) as outcome:
        response = _api(stack, "/api/diagnose", {"question": text, "user": "hostile", "channel": "C1"})
        outcome.answered = response.status_code in (200, 400)
        outcome.problem = "" if outcome.answered else f"API answered HTTP {response.status_code}"
        trace_id = strict_json(outcome, response).get("trace_id")
        if trace_id:
            strict_json(outcome, _api(stack, f"/api/traces/{trace_id}"))
    return outcome


def send_webhook(stack: Stack, text: str) -> Outcome:
    n = next(_COUNTER)
    alert = {
        "status": "firing",
        "labels": {"alertname": text[:300], "service": "order"},
        "annotations": {"summary": "hostile alert", "description": text},
        "startsAt": "2026-11-28T15:05:00Z",
        "fingerprint": f"hostile{n}",
    }
    body = {
        "version": "4",
        "groupKey": f'{{}}:{{alertname="hostile{n}"}}',
        "status": "firing",
        "receiver": "opsbot",
        "alerts": [alert],
    }
    with recorded(stack) as outcome:
        response = _api(stack, "/api/alertmanager", body)
        trace_id = strict_json(outcome, response).get("trace_id")
        if response.status_code != 202 or not trace_id:
            outcome.answered = response.status_code == 400
            outcome.problem = f"webhook answered HTTP {response.status_code}: {response.text[:200]}"
            return outcome
        wait_until(
            lambda: any(
                c.params.get("channel") == ALERT_CHANNEL and trace_id in json.dumps(c.params)
                for c in list(stack.fake.calls)
            ),
            timeout_s=90,
            what="the alert's diagnosis post",
        )
        outcome.answered = True
        strict_json(outcome, _api(stack, f"/api/traces/{trace_id}"))
    return outcome


def send_cli(stack: Stack, text: str) -> Outcome:
    with recorded(stack) as outcome, pytest.MonkeyPatch.context() as patch:
        patch.setattr(wiring, "build_responder", lambda settings: stack.responder)
        result = CliRunner().invoke(cli_app, ["diagnose", "--", text], env=stack.settings_env)
        outcome.outbound.append(result.stdout)
        outcome.answered = result.exit_code == 0
        outcome.problem = "" if outcome.answered else f"exit {result.exit_code}: {result.output[-300:]}"
    return outcome


ENTRY_POINTS: dict[str, Send] = {
    "mention": send_mention,
    "slash": send_slash,
    "dm": send_dm,
    "api": send_api,
    "webhook": send_webhook,
    "cli": send_cli,
}
