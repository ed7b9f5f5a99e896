"""A logging.Filter that redacts every record before any handler writes it.

Installed on the root logger's handlers (a filter on a logger would miss records propagated from its
children), so a secret in a backend's error text or a tool's observation never reaches the log files.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable


class RedactingFilter(logging.Filter):
    """Rewrites the message, the formatted exception and the stack info of each record through `redact`."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__()
        self._redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self._redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        return True


def install_redaction(redact: Callable[[str], str], logger: logging.Logger | None = None) -> RedactingFilter:
    """Add one RedactingFilter to every handler of `logger` (default: root); idempotent per handler."""
    target = logger or logging.getLogger()
    filt = RedactingFilter(redact)
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(filt)
    return filt


_FAILED_TIMES = re.compile(r"has failed for (\d+) times in a row")
NOISY_LIBRARIES = ("elastic_transport", "urllib3", "openai._base_client", "httpx")


class LibraryNoiseFilter(logging.Filter):
    """Third-party retry chatter cut to one line per failure.

    Client libraries log every retry attempt, often with a full traceback (elastic_transport: about 15 per
    diagnosis while Elasticsearch is down). The failure itself reaches the user and our log once, through the
    tool's result. So below ERROR a library keeps only warnings, without their tracebacks, and neither its
    "retrying" records nor a node's repeated "has failed for N times in a row" (only the first of a streak).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR or not record.name.startswith(NOISY_LIBRARIES):
            return True
        message = record.getMessage()
        streak = _FAILED_TIMES.search(message)
        if (
            record.levelno < logging.WARNING
            or message.lower().startswith("retrying")
            or (streak and streak.group(1) != "1")
        ):
            return False
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def install_noise_filter(logger: logging.Logger | None = None) -> None:
    """Add one LibraryNoiseFilter to every handler of `logger` (default: root); idempotent per handler."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, LibraryNoiseFilter) for f in handler.filters):
            handler.addFilter(LibraryNoiseFilter())
