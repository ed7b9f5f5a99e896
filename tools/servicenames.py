"""Services as people say them: "checkout" for `checkout-api`.

A question names a service the way the team speaks, not always as its label value. A word of the question is read
as a service when it is one of that service's aliases (the `aliases` setting: service -> names), or when exactly
one known service starts or ends with it at a `-`/`_`/`.` boundary ("checkout" -> `checkout-api`, "ledger" ->
`payments-ledger`). A word two services start with is not guessed at, nor a word that says a kind of service
("api", "worker", "db"). Every reading is named in the answer, so a
wrong one is seen. An alias that two services claim, or that is another service's own name, is a configuration
error (doctor names it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MIN_WORD_CHARS = 3  # shorter words ("db", "v2") match too much to be read as a service
_WORD_RX = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]|[A-Za-z0-9]")
_SEPARATORS = "-_."
# What a service's name says about its kind, not which one it is: never read as a service without an alias.
GENERIC = frozenset(
    [
        "api",
        "app",
        "apps",
        "svc",
        "service",
        "server",
        "worker",
        "workers",
        "db",
        "database",
        "web",
        "ui",
        "backend",
        "frontend",
        "gateway",
        "proxy",
        "cache",
        "queue",
        "consumer",
        "producer",
        "job",
        "jobs",
        "cron",
        "prod",
        "staging",
        "test",
        "dev",
        "internal",
        "public",
    ]
)


@dataclass(frozen=True)
class NameReading:
    """One word of a question read as a service."""

    said: str
    service: str
    how: str  # "alias" | "prefix" | "suffix"

    def describe(self) -> str:
        """`'checkout' read as checkout-api (its alias)`."""
        if self.how == "alias":
            why = f"an alias of it in aliases.{self.service}"
        else:
            why = f"the one service whose name {'starts' if self.how == 'prefix' else 'ends'} with it"
        return f"{self.said!r} read as {self.service} ({why})"


def alias_owners(aliases: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """alias (lower case) -> the services that list it."""
    owners: dict[str, list[str]] = {}
    for service, names in aliases.items():
        for name in names:
            owners.setdefault(name.strip().lower(), []).append(service)
    return owners


def alias_problems(aliases: Mapping[str, Sequence[str]], services: Sequence[str]) -> list[str]:
    """An alias two services claim, or one that is another service's own name: one line each."""
    known = {s.lower(): s for s in services}
    problems = []
    for alias, owners in alias_owners(aliases).items():
        if len(set(owners)) > 1:
            problems.append(f"the alias {alias!r} is listed for {', '.join(sorted(set(owners)))}: give it to one")
        elif alias in known and known[alias] != owners[0]:
            problems.append(f"the alias {alias!r} of {owners[0]} is the name of the service {known[alias]}")
    return problems


def reading_of(word: str, services: Sequence[str], aliases: Mapping[str, Sequence[str]]) -> NameReading | None:
    """How one word names a service, or None (a service's own name, no match, or more than one)."""
    lowered = word.lower()
    if len(lowered) < MIN_WORD_CHARS or any(lowered in (s, f"{s}s", f"{s}es") for s in map(str.lower, services)):
        return None  # a service's own name, or its plural ("payments" is payment, never payments-db)
    owners = set(alias_owners(aliases).get(lowered, ()))
    if len(owners) == 1:
        return NameReading(word, owners.pop(), "alias")
    if owners or lowered in GENERIC:
        return None
    starts = [s for s in services if _joined(s.lower(), lowered, prefix=True)]
    ends = [s for s in services if _joined(s.lower(), lowered, prefix=False)]
    if len(starts) + len(ends) != 1:
        return None
    return NameReading(word, (starts or ends)[0], "prefix" if starts else "suffix")


def services_said(
    text: str, services: Sequence[str], aliases: Mapping[str, Sequence[str]]
) -> tuple[str, list[NameReading]]:
    """The text with each word that names a service as people say it replaced by the service's name, and how
    each was read."""
    readings: list[NameReading] = []

    def replace(match: re.Match[str]) -> str:
        found = reading_of(match.group(0), services, aliases)
        if found is None:
            return match.group(0)
        readings.append(found)
        return found.service

    return _WORD_RX.sub(replace, text), readings


def _joined(service: str, word: str, *, prefix: bool) -> bool:
    if len(service) <= len(word) + 1:
        return False
    if prefix:
        return service.startswith(word) and service[len(word)] in _SEPARATORS
    return service.endswith(word) and service[-len(word) - 1] in _SEPARATORS
