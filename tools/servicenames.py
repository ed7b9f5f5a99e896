"""Services as people say them: "checkout" for `checkout-api`.

A question names a service the way the team speaks, not always as its label value. A word of the question is read
as a service when it is one of that service's aliases (the `aliases` setting: service -> names). Without an alias,
when the question names no service as it is, a word is read as the one known service that starts or ends with it
at a `-`/`_`/`.` boundary where the rest only says "the service" ("checkout" -> `checkout-api`, "ledger" ->
`ledger-service`); a word more than one service starts or ends with is not guessed at, and neither is a word whose
match names another thing ("invoices" is not `invoices-db`). Every reading is named in the answer, so a wrong one
is seen. An alias that two services claim, or that is another service's own name, is a configuration error
(doctor names it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MIN_WORD_CHARS = 3  # shorter words ("db", "v2") match too much to be read as a service
_WORD_RX = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]|[A-Za-z0-9]")
_SEPARATORS = "-_."
# The rest of a service's name that only says it is the service's own front ("checkout" is checkout-api). A rest
# that names another thing (a database, a cache, a provider, a BFF, a worker) does not make the word mean it:
# "invoices are late" is not about invoices-db, nor "users can't log in" about users-db.
KIND_WORDS = frozenset(("api", "app", "svc", "srv", "service", "server", "backend", "web", "http", "rest", "grpc"))


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


def reading_of(
    word: str, services: Sequence[str], aliases: Mapping[str, Sequence[str]], *, guess: bool = True
) -> NameReading | None:
    """How one word names a service, or None (a service's own name, no match, or more than one); `guess`: also the
    one service the word starts or ends."""
    lowered = word.lower()
    if len(lowered) < MIN_WORD_CHARS or _own_name(lowered, services):
        return None
    owners = set(alias_owners(aliases).get(lowered, ()))
    if len(owners) == 1:
        return NameReading(word, owners.pop(), "alias")
    if owners or not guess:
        return None
    starts = [s for s in services if _rest(s.lower(), lowered, prefix=True) is not None]
    ends = [s for s in services if _rest(s.lower(), lowered, prefix=False) is not None]
    if len(starts) + len(ends) != 1:
        return None
    service, prefix = (starts[0], True) if starts else (ends[0], False)
    if _rest(service.lower(), lowered, prefix=prefix) not in KIND_WORDS:
        return None
    return NameReading(word, service, "prefix" if prefix else "suffix")


def services_said(
    text: str, services: Sequence[str], aliases: Mapping[str, Sequence[str]], *, guess: bool = True
) -> tuple[str, list[NameReading]]:
    """The text with each word that names a service as people say it replaced by the service's name, and how
    each was read. A text that names a service as it is gets its aliases read, and nothing guessed (nor any text
    without `guess`)."""
    readings: list[NameReading] = []
    guess = guess and not any(_own_name(word.lower(), services) for word in _WORD_RX.findall(text))

    def replace(match: re.Match[str]) -> str:
        found = reading_of(match.group(0), services, aliases, guess=guess)
        if found is None:
            return match.group(0)
        readings.append(found)
        return found.service

    return _WORD_RX.sub(replace, text), readings


def _own_name(lowered: str, services: Sequence[str]) -> bool:
    """A service's own name, or its plural ("payments" is payment, never payments-db)."""
    return any(lowered in (s, f"{s}s", f"{s}es") for s in map(str.lower, services))


def _rest(service: str, word: str, *, prefix: bool) -> str | None:
    """What a service's name holds beyond `word` when it starts (or ends) with it at a boundary; else None."""
    if len(service) <= len(word) + 1:
        return None
    if prefix and service.startswith(word) and service[len(word)] in _SEPARATORS:
        return service[len(word) + 1 :]
    if not prefix and service.endswith(word) and service[-len(word) - 1] in _SEPARATORS:
        return service[: -len(word) - 1]
    return None
