"""One Elasticsearch client factory for logs, deploy events and the trace store.

The official client (8.x/9.x) always sends the versioned compat media type
(`application/vnd.elasticsearch+json; compatible-with=9`). OpenSearch and osmem-server reject it in
`Content-Type` with 406, so `plain_json=True` plugs in a node class that rewrites it to `application/json`.
"""

from __future__ import annotations

import re
from typing import Any

from elastic_transport import HttpHeaders, Urllib3HttpNode
from elasticsearch import Elasticsearch

_COMPAT_MEDIA_TYPE = re.compile(r"application/vnd\.elasticsearch\+([a-z\-]+); ?compatible-with=\d+")


class PlainJsonNode(Urllib3HttpNode):
    """A urllib3 node that sends plain `application/json` (and x-ndjson) instead of the compat media type."""

    def perform_request(  # type: ignore[override]
        self, method: str, target: str, body: bytes | None = None, headers: HttpHeaders | None = None, **kw: Any
    ) -> Any:
        """Rewrite Content-Type and Accept, then send as usual."""
        if headers is not None:
            headers = headers.copy()
            for name in ("content-type", "accept"):
                value = headers.get(name)
                if value:
                    headers[name] = _COMPAT_MEDIA_TYPE.sub(r"application/\1", value)
        return super().perform_request(method, target, body=body, headers=headers, **kw)


def es_client(
    url: str,
    *,
    api_key: str = "",
    username: str = "",
    password: str = "",
    verify_certs: bool = True,
    timeout_s: float = 10.0,
    plain_json: bool = False,
    max_retries: int = 1,
) -> Elasticsearch:
    """An Elasticsearch client; `plain_json` for OpenSearch-compatible servers that refuse the compat type."""
    if not url:
        raise ValueError("Elasticsearch URL is empty; set OPSBOT_ELASTICSEARCH__URL")
    options: dict[str, Any] = {
        "verify_certs": verify_certs,
        "request_timeout": timeout_s,
        "max_retries": max_retries,
        "retry_on_timeout": False,  # a slow cluster should cost one timeout, not several
    }
    if api_key:
        options["api_key"] = api_key
    elif username:
        options["basic_auth"] = (username, password)
    if plain_json:
        options["node_class"] = PlainJsonNode
    return Elasticsearch(url, **options)
