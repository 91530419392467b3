"""Fault cases: the ``tools/call`` result each case returns for ``get_account_balance``.

The harness's catalog (``harness/matrix/catalog.py``) owns the case ids, families and spec clauses; this
module implements them. ``CASES`` maps an id to a :class:`Case`. Every payload is deterministic.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, NamedTuple

from tool import ACCOUNT, OTHER_ACCOUNT, OUTPUT_SCHEMA, text_of

MIB = 1024 * 1024
LATENCY_S = 2.0
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Case(NamedTuple):
    """How the server answers ``get_account_balance`` in one case.

    A ``NamedTuple`` rather than a frozen dataclass: the server starts once per cell, and
    ``dataclasses`` imports ``inspect``, 15 ms of a stdio start of about 60 ms.
    """

    id: str
    result: Callable[[], dict[str, Any]]
    delay_s: float = 0.0
    rpc_error: dict[str, Any] | None = None
    """When set, ``tools/call`` is answered with this JSON-RPC error object instead of a result."""
    initialize_version: str | None = None
    """When set, the ``protocolVersion`` of the initialize answer, whatever the client asked for."""
    modern: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """Under 2026-07-28: what is sent instead of the complete modern result (``resultType``,
    ``_meta`` serverInfo), given that result; None sends it as it is."""
    output_schema: dict[str, Any] | None = None
    """The tool's outputSchema when it is not :data:`tool.OUTPUT_SCHEMA` (advertised mode only)."""
    speaks_only: str | None = None
    """Under 2026-07-28: the one revision the server claims to speak, refusing every request with
    ``UnsupportedProtocolVersion`` naming it (a server newer than the client)."""
    tool: dict[str, Any] | None = None
    """The tool's ``tools/list`` entry when it is not ``get_account_balance``'s: a recorded tool's,
    exactly as its server listed it (``replay.py``)."""
    arguments: dict[str, Any] | None = None
    """The arguments a call of ``tool`` must carry (the recorded call's)."""


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _structured(data: Any, *, text: str | None = None, is_error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [_text(text_of(data) if text is None else text)],
        "structuredContent": data,
    }
    if is_error:
        result["isError"] = True
    return result


def _with(**changes: Any) -> dict[str, Any]:
    return {**ACCOUNT, **changes}


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in ACCOUNT.items() if k != key}


def ascii_text(n_bytes: int) -> str:
    """Exactly ``n_bytes`` of printable ASCII, a repeating ledger line."""
    line = "ACC-4471 balance_minor=4071877 currency=USD as_of=2026-01-15T09:30:00Z; "
    repeats = n_bytes // len(line) + 1
    return (line * repeats)[:n_bytes]


def cjk_text(n_chars: int) -> str:
    """Exactly ``n_chars`` CJK ideographs (U+4E00..U+4FFF, 3 bytes each in UTF-8)."""
    block = "".join(chr(0x4E00 + i) for i in range(512))
    return (block * (n_chars // len(block) + 1))[:n_chars]


def blob_bytes(n_bytes: int) -> bytes:
    """Exactly ``n_bytes``: a PNG signature followed by a deterministic byte pattern."""
    pattern = bytes((i * 31 + 7) % 256 for i in range(4096))
    body = pattern * (n_bytes // len(pattern) + 1)
    return (PNG_SIGNATURE + body)[:n_bytes]


def _text_result(text: str) -> dict[str, Any]:
    return {"content": [_text(text)]}


def _blob_result(n_bytes: int) -> dict[str, Any]:
    data = base64.b64encode(blob_bytes(n_bytes)).decode("ascii")
    return {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}


def _many_blocks(count: int) -> dict[str, Any]:
    return {"content": [_text(f"block {i:06d}") for i in range(count)]}


def _ok() -> dict[str, Any]:
    """The correct result (also what every wire-level fault delivers, badly)."""
    return _structured(ACCOUNT)


_ACCOUNT_URI = "ledger://accounts/ACC-4471"
_WAV_HEADER = (
    b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00"
    b"\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
)

COMPOSITION_DEPTH = 16
"""``schema-composition-heavy``: a chain of this many ``$defs``, each ``allOf`` the next one twice,
so a validator without bounds evaluates the last one 2**16 = 65,536 times."""
FUTURE_REVISION = "2027-03-15"
"""``unsupported-version``: the revision the server claims to speak instead (none has this date)."""


def _array_schema() -> dict[str, Any]:
    return {"type": "array", "items": OUTPUT_SCHEMA}


def _ref_schema() -> dict[str, Any]:
    """The account schema through ``$ref``/``$defs``, with 2020-12 keywords (const, unevaluatedProperties)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {
            "accountId": {"type": "string", "pattern": "^ACC-[0-9]{4}$"},
            "currency": {"type": "string", "enum": ["USD", "EUR", "CHF"]},
            "account": {
                "type": "object",
                "properties": {
                    "account_id": {"$ref": "#/$defs/accountId"},
                    "balance_minor": {"type": "integer"},
                    "currency": {"$ref": "#/$defs/currency"},
                    "as_of": {"type": "string", "format": "date-time"},
                },
                "required": ["account_id", "balance_minor", "currency", "as_of"],
            },
        },
        "type": "object",
        "$ref": "#/$defs/account",
        "unevaluatedProperties": False,
    }


def _unresolvable_ref_schema() -> dict[str, Any]:
    """The account schema whose ``currency`` refers to a definition that exists nowhere."""
    schema: dict[str, Any] = {**OUTPUT_SCHEMA, "properties": dict(OUTPUT_SCHEMA["properties"])}
    schema["properties"]["currency"] = {"$ref": "https://schemas.example.invalid/ledger/currency.json"}
    return schema


def _composition_schema(depth: int = COMPOSITION_DEPTH) -> dict[str, Any]:
    defs: dict[str, Any] = {
        f"level{i}": {"allOf": [{"$ref": f"#/$defs/level{i + 1}"}, {"$ref": f"#/$defs/level{i + 1}"}]}
        for i in range(depth)
    }
    defs[f"level{depth}"] = {"type": "object", "required": ["account_id"]}
    return {**OUTPUT_SCHEMA, "$defs": defs, "allOf": [{"$ref": "#/$defs/level0"}]}


def _nullable_schema() -> dict[str, Any]:
    return {"anyOf": [OUTPUT_SCHEMA, {"type": "null"}]}


def _without_key(key: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda result: {k: v for k, v in result.items() if k != key}


def _without_server_info(result: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in result["_meta"].items() if k != "io.modelcontextprotocol/serverInfo"}
    return {**{k: v for k, v in result.items() if k != "_meta"}, **({"_meta": meta} if meta else {})}


def _input_required(result: dict[str, Any]) -> dict[str, Any]:
    """An interim result asking the client for an elicitation it never declared it can answer."""
    return {
        "resultType": "input_required",
        "inputRequests": {
            "confirm_read": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Confirm that the balance of ACC-4471 may be read",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"confirm": {"type": "boolean"}},
                        "required": ["confirm"],
                    },
                },
            }
        },
        "requestState": "ledger-read-ACC-4471-step-1",
        "_meta": result["_meta"],
    }


_ERROR_TEXT = "Ledger service unavailable: could not read balance of ACC-4471"
_FULL_TEXT = text_of(ACCOUNT)

_DEFINITIONS: list[Case] = [
    # schema family
    Case("ok", _ok),
    Case("no-structured", lambda: {"content": [_text(_FULL_TEXT)]}),
    Case("type-swap", lambda: _structured(_with(balance_minor="4071877"))),
    Case("drop-required", lambda: _structured(_without("currency"))),
    Case("extra-field", lambda: _structured(_with(branch="Zurich-3"))),
    Case("wrong-container", lambda: _structured([ACCOUNT])),
    Case("null-structured", lambda: _structured(None, text=_FULL_TEXT)),
    Case(
        "iserror-bad-structured",
        lambda: _structured({"error": "ledger_unavailable"}, text=_ERROR_TEXT, is_error=True),
    ),
    Case("iserror-plain", lambda: {"content": [_text(_ERROR_TEXT)], "isError": True}),
    Case("iserror-valid-structured", lambda: _structured(ACCOUNT, is_error=True)),
    Case("diverge", lambda: _structured(ACCOUNT, text=text_of(OTHER_ACCOUNT))),
    Case("empty-content-structured", lambda: {"content": [], "structuredContent": ACCOUNT}),
    Case("missing-content", lambda: {"structuredContent": ACCOUNT}),
    Case("corrupt-plausible", lambda: _structured(OTHER_ACCOUNT)),
    Case(
        "error",
        lambda: {
            "content": [_text("Error executing tool get_account_balance: account ACC-4471 is locked")],
            "isError": True,
        },
    ),
    Case("empty-string", lambda: {"content": [_text("")]}),
    Case("truncate", lambda: {"content": [_text(_FULL_TEXT[: len(_FULL_TEXT) // 2])]}),
    Case("latency", _ok, delay_s=LATENCY_S),
    Case("structured-array", lambda: _structured([ACCOUNT]), output_schema=_array_schema()),
    Case(
        "structured-string",
        lambda: _structured("ACC-4471: 40718.77 USD"),
        output_schema={"type": "string"},
    ),
    Case("structured-number", lambda: _structured(4071877), output_schema={"type": "integer"}),
    Case("structured-null", lambda: _structured(None, text="null"), output_schema=_nullable_schema()),
    Case("schema-ref-defs", _ok, output_schema=_ref_schema()),
    Case("schema-ref-unresolvable", _ok, output_schema=_unresolvable_ref_schema()),
    Case("schema-composition-heavy", _ok, output_schema=_composition_schema()),
    # size family
    Case("text-9mib", lambda: _text_result(ascii_text(9 * MIB))),
    Case("text-10mib", lambda: _text_result(ascii_text(10 * MIB))),
    Case("text-12mib", lambda: _text_result(ascii_text(12 * MIB))),
    Case("cjk-3m", lambda: _text_result(cjk_text(3_000_000))),
    Case("cjk-3.5m", lambda: _text_result(cjk_text(3_500_000))),
    Case("blob-7mib", lambda: _blob_result(7 * MIB)),
    Case("blob-8mib", lambda: _blob_result(8 * MIB)),
    Case("many-blocks", lambda: _many_blocks(100_000)),
    Case("three-4mib", lambda: _text_result(ascii_text(4 * MIB))),
    # transport family: the ok result, delivered badly on stdio (see stdio_faults.py)
    *(
        Case(case_id, _ok)
        for case_id in (
            "stdout-noise",
            "stdout-banner",
            "stderr-flood",
            "malformed-frame",
            "partial-frame-eof",
            "exit-mid-call",
            "no-response",
            "wrong-id",
            "duplicate-response",
            "interleaved-notifications",
            "crlf-framing",
            "slow-writer",
            "cancel-then-followup",
        )
    ),
    # protocol family
    Case("version-mismatch", _ok, initialize_version="1999-01-01"),
    Case("jsonrpc-error", _ok, rpc_error={"code": -32603, "message": "Internal error: ledger unavailable"}),
    Case(
        "jsonrpc-error-data",
        _ok,
        rpc_error={
            "code": -32603,
            "message": "Internal error: ledger unavailable",
            "data": {"retry_after_s": 30, "ledger": "primary", "account_id": "ACC-4471"},
        },
    ),
    Case("error-no-message", _ok, rpc_error={"code": -32603}),
    Case("resulttype-missing", _ok, modern=_without_key("resultType")),
    Case("resulttype-unknown", _ok, modern=lambda result: {**result, "resultType": "partial"}),
    Case("input-required-unanswerable", _ok, modern=_input_required),
    Case("no-server-info", _ok, modern=_without_server_info),
    Case("unsupported-version", _ok, speaks_only=FUTURE_REVISION),
    Case(
        "unknown-content-type",
        lambda: {
            "content": [{"type": "hologram", "data": "SG9sb2dyYW0=", "mimeType": "model/hologram"}, _text(_FULL_TEXT)]
        },
    ),
    Case("content-missing-type", lambda: {"content": [{"text": _FULL_TEXT}]}),
    Case(
        "resource-link",
        lambda: {
            "content": [
                _text(_FULL_TEXT),
                {
                    "type": "resource_link",
                    "uri": _ACCOUNT_URI,
                    "name": "ACC-4471 balance",
                    "mimeType": "application/json",
                },
            ]
        },
    ),
    Case(
        "embedded-resource",
        lambda: {
            "content": [
                {
                    "type": "resource",
                    "resource": {"uri": _ACCOUNT_URI, "mimeType": "application/json", "text": _FULL_TEXT},
                }
            ]
        },
    ),
    Case(
        "audio",
        lambda: {
            "content": [
                _text(_FULL_TEXT),
                {"type": "audio", "data": base64.b64encode(_WAV_HEADER).decode("ascii"), "mimeType": "audio/wav"},
            ]
        },
    ),
]

CASES: dict[str, Case] = {case.id: case for case in _DEFINITIONS}
PROBE_CASE = Case("probe", _ok)
"""Not a catalog case: the harness's boundary probe (the frame comes from stdio_faults.Probe)."""
assert len(CASES) == len(_DEFINITIONS), "duplicate case id"


def case_ids() -> list[str]:
    """Every implemented case id, in catalog order."""
    return list(CASES)
