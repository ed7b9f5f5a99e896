"""What the HTTP surface keeps on the Redis every replica shares, besides the jobs themselves (those are the job
runner's, bot/durable/redisjobs.py): the alert groups that already have a run, and the jobs' statuses for
`opsbot traces`.
"""

from __future__ import annotations

from typing import Any

from bot.durable.group import text_from_redis


class RedisAlertDedupe:
    """The AlertDedupe seam on Redis (SET NX EX): a re-notification that reaches another replica starts no run."""

    def __init__(self, client: Any, ttl_s: float, *, prefix: str = "opsbot") -> None:
        self._client, self._ttl_s, self._prefix = client, max(int(ttl_s), 1), f"{prefix}:alert:"

    def first_time(self, key: str) -> bool:
        return bool(self._client.set(self._prefix + key, "1", nx=True, ex=self._ttl_s))

    def forget(self, key: str) -> None:
        self._client.delete(self._prefix + key)


def job_statuses_from_redis(client: Any, trace_ids: list[str], *, prefix: str = "opsbot") -> dict[str, str]:
    """Each job's status in the shared queue (queued, running, done, failed, interrupted); absent: unknown. Slack's
    jobs and the API's share the key layout (`<prefix>:job:<id>`)."""
    pipe = client.pipeline()
    for trace_id in trace_ids:
        pipe.hget(f"{prefix}:job:{trace_id}", "status")
    found = zip(trace_ids, pipe.execute(), strict=True)
    return {t: text_from_redis(v) for t, v in found if v}
