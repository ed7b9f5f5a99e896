"""The version a GitOps commit deploys: the image tag it sets, read from the keys it changed.

Recognised: Helm values (`image.tag`, `<x>.image.tag`, `image: repo:tag`), kustomize and Flux
(`images[<name>].newTag`, `images[<name>].digest`), plain manifests (`containers[<name>].image: repo:tag` or
`repo@sha256:...`). A commit that sets none is a configuration change: `config@<short sha>`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tools.analysis.configdiff import ABSENT, KeyChange

CONFIG_PREFIX = "config@"
_TAG_KEY_RX = re.compile(r"(?:^|\.)image\.tag$|\.newTag$|^images\[[^\]]+\]\.digest$", re.IGNORECASE)
_IMAGE_KEY_RX = re.compile(r"(?:^|[.\]])image$", re.IGNORECASE)
_UNSAFE_RX = re.compile(r"[^A-Za-z0-9._+-]")


def version_from_changes(changes: Sequence[KeyChange], service: str, sha: str) -> str:
    """The image tag the changes set (the one naming the service first), else `config@<sha7>`."""
    tags = [(c, tag) for c in changes if (tag := _tag_set(c))]
    if not tags:
        return f"{CONFIG_PREFIX}{sha[:7]}"
    named = [tag for c, tag in tags if service.lower() in c.key.lower() or service.lower() in c.new.lower()]
    return (named or [tag for _, tag in tags])[0]


def is_image_key(change: KeyChange) -> bool:
    """A key that names what image runs (its tag, digest or reference)."""
    return bool(_TAG_KEY_RX.search(change.key) or _IMAGE_KEY_RX.search(change.key))


def image_tags(change: KeyChange) -> tuple[str, str]:
    """(old tag, new tag) an image key changed, "" for a side that has none (a new key, a plain config key)."""
    if not is_image_key(change):
        return "", ""
    old = KeyChange(change.key, change.new, change.old, change.path)  # read the old side as if it were set
    return _tag_set(old), _tag_set(change)


def _tag_set(change: KeyChange) -> str:
    if change.new in (ABSENT, "", "null"):
        return ""
    if _TAG_KEY_RX.search(change.key):
        return _safe(change.new)
    if _IMAGE_KEY_RX.search(change.key):
        return _safe(_tag_of_reference(change.new))
    return ""


def _tag_of_reference(image: str) -> str:
    """`registry:5000/team/order:v1.4.0` -> v1.4.0; `order@sha256:abc...` -> sha256-abc... (12 hex); `order` -> ''."""
    name, _, digest = image.partition("@")
    if digest:
        return digest.replace(":", "-")[: len("sha256-") + 12]
    last = name.rsplit("/", 1)[-1]
    return last.partition(":")[2]


def _safe(tag: str) -> str:
    """A tag as a version the tools accept back (letters, digits, `._+-`, at most 64 characters)."""
    cleaned = _UNSAFE_RX.sub("-", tag.strip().strip("\"'")).lstrip("-._+")
    return cleaned[:64]
