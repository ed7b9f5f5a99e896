"""Training-time augmentation: copies of the corpus messages with their service names swapped for made-up ones.

The corpus names a few dozen services (order, payment, checkout...). Left alone, the model learns those names as
evidence ("payment" -> diagnose), which does not carry over to a team whose services are called something else.
Each copy replaces every corpus service name with another name, drawn (seeded) half of the time from a pool of
plausible names that no labelled split uses and half of the time made up from syllables and a suffix ("tavo-api",
"kelmir-worker"), so no name, and no part of one, carries the route. Names are matched on ASCII boundaries, so
"payment的p99" in Chinese text is renamed too.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import replace

from bot.routing.scorecard import Example

CORPUS_SERVICES = (
    "order",
    "orders",
    "payment",
    "payments",
    "checkout",
    "cart",
    "search",
    "auth",
    "inventory",
    "gateway",
    "billing",
    "shipping",
    "ledger",
    "notification",
    "notifications",
    "recommendation",
    "user-profile",
    "kafka",
    "redis",
    "api-gateway",
    "mysql",
    "postgres",
)
MADE_UP_SERVICES = (
    "wallet",
    "media",
    "geo",
    "tickets",
    "loyalty",
    "subscriptions",
    "invoices",
    "accounts",
    "sessions",
    "feeds",
    "ads",
    "messaging",
    "maps",
    "rates",
    "vault",
    "uploader",
    "scheduler",
    "webhooks",
    "ledger-sync",
    "quotes-api",
    "trips",
    "coupons",
    "returns",
    "reviews",
    "stock-sync",
    "tax",
    "kyc",
    "chat",
    "routing-svc",
    "assets",
)
_SYLLABLES = (
    "ka",
    "ve",
    "lo",
    "mi",
    "tar",
    "zen",
    "bro",
    "qui",
    "dal",
    "nor",
    "pex",
    "sol",
    "tri",
    "vu",
    "gam",
    "ori",
    "fen",
    "hal",
    "jit",
    "mos",
    "rek",
    "sy",
    "ton",
    "wy",
    "xa",
    "bel",
    "cor",
    "dun",
    "elm",
    "ify",
)
_SUFFIXES = ("", "", "", "-api", "-svc", "-service", "-worker", "-gw", "-v2", "-sync", "-core", "-proxy", "-db")
_NAMES = re.compile(
    r"(?<![A-Za-z0-9_-])("
    + "|".join(sorted(map(re.escape, CORPUS_SERVICES), key=len, reverse=True))
    + r")(?![A-Za-z0-9_-])",
    re.IGNORECASE,
)


def made_up_name(rng: random.Random, pool: Sequence[str] = MADE_UP_SERVICES) -> str:
    """A plausible service name: from `pool`, or two or three syllables and a suffix."""
    if rng.random() < 0.5:
        return rng.choice(pool)
    stem = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3))))
    return stem + rng.choice(_SUFFIXES)


def renamed_copies(
    examples: Sequence[Example], copies: int, seed: int, pool: Sequence[str] = MADE_UP_SERVICES
) -> list[Example]:
    """`copies` renamed copies of every example that names a corpus service (the others have nothing to swap)."""
    rng = random.Random(seed)
    out = []
    for example in examples:
        if not _NAMES.search(example.text):
            continue
        for _ in range(copies):
            text = _NAMES.sub(lambda _m: made_up_name(rng, pool), example.text)
            out.append(replace(example, text=text, kind=f"{example.kind}+renamed"))
    return out
