"""What a setting's value must look like, checked when Settings is read (so `serve` stops at start, naming it).

A URL that cannot work ("htp//prometheus:9090", a port out of range, no host) would otherwise pass start-up and
fail in the middle of a diagnosis; a port outside 1-65535 would fail when the server binds. These are pydantic
types: a field declared with one is checked wherever Settings comes from (environment, .env, the config file), and
the error names the field's variable (bot/wiring/doctor.py's settings_problems). Whether a path can be used is a
question for the machine it runs on, and a bad Redis URL must not be echoed (it may carry a password):
bot/wiring/startup.py checks those when `serve` starts.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

HTTP_SCHEMES = ("http", "https")
REDIS_SCHEMES = ("redis", "rediss", "unix")


def url_problem(value: str, schemes: tuple[str, ...]) -> str:
    """Why `value` is not a usable URL with one of `schemes` ("" when it is)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port  # raises on a port that is not a number or out of range
    except ValueError as exc:
        return f"not a URL ({exc})"
    example = f"{schemes[0]}://host:port"
    if parts.scheme not in schemes:
        return (
            f"not a {'/'.join(schemes)} URL: it must start with {' or '.join(f'{s}://' for s in schemes)} ({example})"
        )
    if parts.scheme != "unix" and not parts.hostname:
        return f"no host in the URL ({example})"
    if port == 0:
        return "port 0 in the URL"
    return ""


def _http_url(value: str) -> str:
    if problem := url_problem(value, HTTP_SCHEMES):
        raise ValueError(problem)
    return value


def _http_url_or_empty(value: str) -> str:
    return _http_url(value) if value.strip() else value


HttpUrl = Annotated[str, AfterValidator(_http_url)]
OptionalHttpUrl = Annotated[str, AfterValidator(_http_url_or_empty)]  # "" = not used
Port = Annotated[int, Field(ge=1, le=65_535)]
