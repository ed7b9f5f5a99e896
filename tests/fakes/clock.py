"""FakeClock: a monotonic clock that tests move by hand, for code that takes `clock: Callable[[], float]`."""

from __future__ import annotations


class FakeClock:
    """Returns `now` until a test sets it; time never passes on its own, so no test waits or races."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
