"""Deterministic elision of large JSON values, shared by the server journal and the harness.

``elide(value)`` returns a JSON value in which every string longer than ``MAX_STRING`` characters
and every array longer than ``MAX_ARRAY`` items is replaced by a small marker object carrying its
length and a SHA-256 of its content. Two values are equal if and only if their elided forms are
equal (up to hash collisions), so the harness can compare what a client returned with what the
server sent without keeping megabytes of payload. Standard library only; no sibling imports.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_STRING = 4096
MAX_ARRAY = 64
HEAD_CHARS = 80
HEAD_ITEMS = 3


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def canonical_json(value: Any) -> str:
    """Canonical JSON of ``value``: sorted keys, no spaces, UTF-8 kept, null members left out.

    Object members whose value is null are left out because serializers disagree on them
    (pydantic writes ``"annotations": null`` where JavaScript omits the key) without any
    difference in meaning for the caller.
    """
    return json.dumps(_without_nulls(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


CHUNK_CHARS = 1 << 20
"""Long strings are encoded for their hash and byte length a megabyte of characters at a time, so
that eliding a 64 MiB string does not make a second 64 MiB copy of it."""


def _utf8_digest(text: str) -> tuple[int, str]:
    """The UTF-8 length and SHA-256 of ``text`` (lone surrogates passed through), chunk by chunk."""
    digest = hashlib.sha256()
    size = 0
    for start in range(0, len(text), CHUNK_CHARS):
        chunk = text[start : start + CHUNK_CHARS].encode("utf-8", "surrogatepass")
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def _sha256(text: str) -> str:
    return _utf8_digest(text)[1]


def elide(value: Any) -> Any:
    """Return ``value`` with long strings and arrays replaced by ``{"$elided": ...}`` markers."""
    if isinstance(value, str):
        if len(value) <= MAX_STRING:
            return value
        size, sha256 = _utf8_digest(value)
        return {
            "$elided": "string",
            "length": len(value),
            "utf8_bytes": size,
            "sha256": sha256,
            "head": value[:HEAD_CHARS],
        }
    if isinstance(value, list):
        if len(value) <= MAX_ARRAY:
            return [elide(item) for item in value]
        return {
            "$elided": "array",
            "length": len(value),
            "sha256": _sha256(canonical_json(value)),
            "head": [elide(item) for item in value[:HEAD_ITEMS]],
        }
    if isinstance(value, dict):
        return {key: elide(item) for key, item in value.items()}
    return value


def as_text(value: Any) -> str:
    """A string for display: ``value`` itself, or an elided string's head and length."""
    if isinstance(value, str):
        return value
    if is_elided(value) and value.get("$elided") == "string":
        return f"{value.get('head', '')}… [{value.get('length')} characters, elided]"
    return "" if value is None else str(value)


def is_elided(value: Any) -> bool:
    """True when ``value`` is a marker produced by :func:`elide`."""
    return isinstance(value, dict) and "$elided" in value
