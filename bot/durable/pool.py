"""The worker pool over a ConsumerGroup, for the job runner's Redis backend (bot/durable/redisjobs.py): every queue's
jobs run on it; what a job *is* stays the caller's (the `handle` callback).

- `workers` threads each ask the group for a message only when free (so what a replica has not started stays
  in the stream for the others), hand it to `handle`, then ack it. When `handle` raises (e.g. Redis went away
  for a moment), the message is left pending, the worker backs off a second, and the message is claimed again
  once its idle time passes.
- One heartbeat thread re-claims the running messages so no other replica takes a job that is still running,
  calls `on_beat` (a queue's own upkeep, if it has any), registers this replica's
  capacity (bot/durable/capacity.py), and every REAP_EVERY beats removes the consumers of replicas gone for good.
- `close(drain_s)`: stop reading; running messages get drain_s; the heartbeat beats until then, so a long
  drain does not hand a running job to another replica. What is still running is returned (it stays pending
  and another replica claims it once the heartbeat has stopped).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from bot.durable.capacity import Capacity
from bot.durable.group import ConsumerGroup, Message

log = logging.getLogger(__name__)

REAP_EVERY = 30  # heartbeats between two sweeps for dead consumers
REAP_AFTER_CLAIMS = 10  # a consumer idle for this many claim_idle_s, with nothing pending, is gone for good

Handle = Callable[[Message], None]


class StreamWorkers:
    """`workers` threads (0: this replica only adds jobs) and a heartbeat over `group`, named `name`."""

    def __init__(
        self,
        group: ConsumerGroup,
        replica: str,
        *,
        name: str,
        workers: int,
        handle: Handle,
        on_beat: Callable[[], None] | None = None,
        capacity: Capacity | None = None,
    ) -> None:
        self._group, self._replica, self._name, self._handle = group, replica, name, handle
        self._workers = max(workers, 0)
        self._on_beat = on_beat or (lambda: None)
        self._capacity = capacity
        self._closing, self._stopped = threading.Event(), threading.Event()
        self._running: dict[str, Message] = {}  # stream message id -> message, this process only
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    @property
    def closing(self) -> bool:
        return self._closing.is_set()

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._running)

    def start(self) -> None:
        """Start the workers and the heartbeat (idempotent)."""
        if self._threads:
            return
        self._threads = [
            threading.Thread(
                target=self._work, args=(f"{self._replica}-{self._name}-{n}",), name=f"{self._name}-{n}", daemon=True
            )
            for n in range(self._workers)
        ]
        self._threads.append(threading.Thread(target=self._heartbeat, name=f"{self._name}-heartbeat", daemon=True))
        for thread in self._threads:
            thread.start()
        self._register()

    def close(self, drain_s: float) -> list[Message]:
        """Stop reading; running messages get drain_s in total; returns those still running at the deadline."""
        self._closing.set()
        deadline = time.monotonic() + drain_s
        for thread in self._threads[:-1]:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self._stopped.set()
        if self._capacity is not None:
            self._quietly(self._capacity.leave, "leaving the capacity register")
        with self._lock:
            return list(self._running.values())

    def _work(self, consumer: str) -> None:
        while not self._closing.is_set():
            try:
                message = self._group.next_message(consumer)
                if message is not None:
                    self._run(message)
            except Exception:  # Redis away for a moment: log, back off, go on (the job stays pending)
                log.exception("%s worker %s failed; retrying in 1 s", self._name, consumer)
                time.sleep(1.0)

    def _run(self, message: Message) -> None:
        with self._lock:
            self._running[message.message_id] = message
        self._register()
        try:
            self._handle(message)
        finally:
            with self._lock:
                self._running.pop(message.message_id, None)
            self._register()
        self._group.ack(message.message_id)

    def _heartbeat(self) -> None:
        beats = 0
        while not self._stopped.wait(self._group.claim_idle_ms / 3000):
            with self._lock:
                running = list(self._running)
            try:
                self._group.keep_alive(f"{self._replica}-hb", running)
                self._on_beat()
                self._register()
                if beats % REAP_EVERY == 0:
                    self._group.reap_idle_consumers(
                        REAP_AFTER_CLAIMS * self._group.claim_idle_ms / 1000, keep_prefix=self._replica
                    )
            except Exception:
                log.exception("%s heartbeat failed", self._name)
            beats += 1

    def _register(self) -> None:
        if self._capacity is not None and not self._stopped.is_set():
            workers = 0 if self._closing.is_set() else self._workers
            self._quietly(
                lambda: self._capacity.register(workers, self.active) if self._capacity else None,
                "registering this replica's capacity",
            )

    @staticmethod
    def _quietly(action: Callable[[], object], what: str) -> None:
        try:
            action()
        except Exception as exc:  # capacity is advice for the queue notice; never fail a job over it
            log.info("%s failed: %s", what, exc)
