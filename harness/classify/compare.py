"""Comparing what a client returned with what the server sent (the ``altered`` column).

Both sides are elided the same way (``servers/reference/elide.py``), so equal elided values mean
equal payloads. Only the fields of a tool result that reach a caller are compared, after removing
serializer noise: object members that are null, a missing ``isError`` (false), a missing
``structuredContent`` (null).
"""

from __future__ import annotations

from typing import Any

from servers.reference.elide import is_elided

MISSING = "<missing>"
FIELDS = ("content", "structuredContent", "isError")


def _drop_nulls(value: Any) -> Any:
    if is_elided(value):  # compared by length and hash; the head is only for reading
        return {key: item for key, item in value.items() if key != "head"}
    if isinstance(value, dict):
        return {key: _drop_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_drop_nulls(item) for item in value]
    return value


def normalize(result: Any) -> dict[str, Any]:
    """The caller-visible fields of a tool result, in comparable form."""
    if not isinstance(result, dict):
        return {"content": MISSING, "structuredContent": None, "isError": False, "shape": repr(type(result))}
    content = result.get("content")
    return {
        "content": MISSING if content is None else _drop_nulls(content),
        "structuredContent": _drop_nulls(result.get("structuredContent")),
        "isError": bool(result.get("isError")),
    }


def differences(observed: Any, sent: Any) -> list[str]:
    """The fields (``content``, ``structuredContent``, ``isError``) that differ."""
    left, right = normalize(observed), normalize(sent)
    return [name for name in FIELDS if left.get(name) != right.get(name)] + (
        ["shape"] if left.get("shape") != right.get("shape") else []
    )
