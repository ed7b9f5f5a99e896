"""A share that reads 0 for a whole check window while its total does not: doctor's warning.

`(errors or vector(0)) / requests` answers, so a query check passes, yet when the failing matcher matches no value
the label holds (`status=~"5.."` on a counter whose status is "success"/"error", or `outcome="SERVER_ERROR"` where
it is "error") the error rate reads 0 % for ever and every diagnosis says "errors: no change". A healthy hour reads
0 too, so this is a warning, with what the matcher's labels hold, for the reader to tell the two apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tools.base import ToolError

if TYPE_CHECKING:
    from tools.metrics.prometheus import PrometheusAPI

MAX_VALUES = 6
_SELECTOR_RX = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^{}]*)\}")
_MATCHER_RX = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')


def total_of(promql: str) -> str:
    """The divisor of a share (what follows its last top-level `/`), or "" when the query is no division."""
    depth, cut = 0, -1
    for i, char in enumerate(promql):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "/" and depth == 0:
            cut = i
    return promql[cut + 1 :].strip() if cut >= 0 else ""


def zero_share_warning(
    client: PrometheusAPI, promql: str, label: str, since: datetime, now: datetime, step: str
) -> str:
    """Why a share that read 0 throughout may be wrong, or "" (not all 0, no divisor, or a total that is 0 too)."""
    total = total_of(promql)
    if not total or not _all_zero(client.query_range(promql, since, now, step)):
        return ""
    try:
        served = client.query_range(total, since, now, step)
    except ToolError:
        return ""
    if _all_zero(served):
        return ""
    held = _matcher_values(client, promql[: len(promql) - len(total)], label, since)
    return (
        f"it reads 0 for the whole last hour while its total ({total}) does not: its matcher may match nothing "
        f"({held}); a healthy hour reads 0 too"
    )


def _all_zero(series: Sequence[dict[str, Any]]) -> bool:
    values = [float(v) for s in series for _, v in s.get("values", ())]
    return bool(values) and all(v == 0 for v in values)


def _matcher_values(client: PrometheusAPI, numerator: str, label: str, since: datetime) -> str:
    """`status=~"5.." where status holds 200, 404` for each matcher of the numerator beside the service's."""
    said = []
    for metric, matchers in _SELECTOR_RX.findall(numerator):
        for name, op, wanted in _MATCHER_RX.findall(matchers):
            if name == label:
                continue
            values = sorted(client.label_values(name, match=metric, since=since))
            shown = ", ".join(values[:MAX_VALUES]) + (", …" if len(values) > MAX_VALUES else "") or "no values"
            said.append(f'{name}{op}"{wanted}" where {metric}\'s {name} holds {shown}')
    return "; ".join(dict.fromkeys(said)) or "no matcher beside the service's"
