"""Training-time augmentation: copies of the corpus messages with their service names swapped for made-up ones.

The corpus names a dozen services (order, payment, checkout...). Left alone, the model learns those names as
evidence ("payment" -> diagnose), which does not carry over to a team whose services are called something else.
Each copy replaces every corpus service name with a name drawn (seeded) from a pool that no labelled split uses,
so the n-grams of any one name stop carrying the route.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import replace

from bot.routing.scorecard import Example

CORPUS_SERVICES = (
    "order", "orders", "payment", "payments", "checkout", "cart", "search", "auth", "inventory", "gateway",
    "billing", "shipping", "ledger", "notification", "recommendation", "user-profile", "kafka", "redis",
)  # fmt: skip
MADE_UP_SERVICES = (
    "wallet", "media", "geo", "tickets", "loyalty", "subscriptions", "invoices", "accounts", "sessions", "feeds",
    "ads", "messaging", "maps", "rates", "vault", "uploader", "scheduler", "webhooks", "ledger-sync", "quotes-api",
    "trips", "coupons", "returns", "reviews", "stock-sync", "tax", "kyc", "chat", "routing-svc", "assets",
)  # fmt: skip
_NAMES = re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, CORPUS_SERVICES), key=len, reverse=True))
                    + r")(?![\w-])", re.IGNORECASE)


def renamed_copies(examples: Sequence[Example], copies: int, seed: int,
                   pool: Sequence[str] = MADE_UP_SERVICES) -> list[Example]:
    """`copies` renamed copies of every example that names a corpus service (the others have nothing to swap)."""
    rng = random.Random(seed)
    out = []
    for example in examples:
        if not _NAMES.search(example.text):
            continue
        for _ in range(copies):
            text = _NAMES.sub(lambda _m: rng.choice(pool), example.text)
            out.append(replace(example, text=text, kind=f"{example.kind}+renamed"))
    return out
