"""The client-free checks of a recorded result (``harness/classify/result_checks.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.classify import result_checks
from harness.recorded import case_files

SCHEMA = {
    "type": "object",
    "properties": {"sku": {"type": "string"}, "on_hand": {"type": "integer"}},
    "required": ["sku", "on_hand"],
}
STOCK = {"sku": "A-100", "on_hand": 42}


def _checks(tool_extra: dict, result: dict, frame_bytes: int | None = 200, boundaries=()) -> dict[str, list]:
    data = {
        "case_file": 1,
        "name": "stock",
        "server": {"name": "s", "version": "1"},
        "protocol": "2025-11-25",
        "tool": {"name": "stock_level", "inputSchema": {"type": "object"}, **tool_extra},
        "arguments": {"sku": "A-100"},
        "result": result,
        "frame_bytes": frame_bytes,
    }
    found: dict[str, list] = {}
    for check in result_checks.check(case_files.parse(Path("stock.json"), json.dumps(data)), list(boundaries)):
        found.setdefault(check.name, []).append((check.status, check.message))
    return found


def _text(data: object) -> dict:
    return {"type": "text", "text": json.dumps(data)}


def test_a_well_formed_result_passes_every_check():
    found = _checks({"outputSchema": SCHEMA}, {"content": [_text(STOCK)], "structuredContent": STOCK})
    assert found["schema"] == [("ok", "structuredContent conforms to the outputSchema (Draft202012)")]
    assert found["text-carries-structured"][0][0] == "ok"
    assert "content" not in found


def test_a_result_that_breaks_its_schema_names_the_path_and_the_validator_s_message():
    bad = {"sku": "A-100", "on_hand": "42"}
    found = _checks({"outputSchema": SCHEMA}, {"content": [_text(bad)], "structuredContent": bad})
    assert found["schema"] == [
        ("fault", "structuredContent does not conform (Draft202012): $.on_hand: '42' is not of type 'integer'")
    ]


def test_the_schema_s_own_dialect_is_used():
    draft7 = {**SCHEMA, "$schema": "http://json-schema.org/draft-07/schema#"}
    found = _checks({"outputSchema": draft7}, {"content": [_text(STOCK)], "structuredContent": STOCK})
    assert found["schema"][0] == ("ok", "structuredContent conforms to the outputSchema (Draft7)")


def test_a_network_ref_is_never_fetched():
    schema = {"$ref": "https://schemas.example.invalid/stock.json"}
    found = _checks({"outputSchema": schema}, {"content": [_text(STOCK)], "structuredContent": STOCK})
    status, message = found["schema"][0]
    assert status == "fault" and "cannot be resolved offline" in message


@pytest.mark.parametrize(
    ("tool_extra", "result", "name", "status"),
    [
        ({"outputSchema": SCHEMA}, {"content": [_text(STOCK)]}, "schema-without-structured", "fault"),
        ({"outputSchema": SCHEMA}, {"content": [_text("no")], "isError": True}, "schema-without-structured", "note"),
        ({}, {"content": [_text(STOCK)], "structuredContent": STOCK}, "structured-without-schema", "note"),
        (
            {},
            {"content": [{"type": "text", "text": "ok"}], "structuredContent": STOCK},
            "text-carries-structured",
            "fault",
        ),
        (
            {},
            {"content": [_text(STOCK)], "structuredContent": STOCK, "isError": True},
            "iserror-with-structured",
            "note",
        ),
        ({}, {"structuredContent": STOCK}, "content", "fault"),
    ],
    ids=[
        "schema-no-structured",
        "error-no-structured",
        "structured-no-schema",
        "text-says-ok",
        "iserror",
        "no-content",
    ],
)
def test_each_mismatch_between_the_result_s_channels_is_named(tool_extra, result, name, status):
    assert _checks(tool_extra, result)[name][0][0] == status


def test_the_frame_is_compared_with_every_probed_limit_of_its_payload_kind():
    boundaries = [
        {"column": "ts-sdk/call-only", "kind": "text", "largest_accepted": 10_485_760, "no_limit_up_to": None},
        {"column": "tiny/default", "kind": "text", "largest_accepted": 1_000, "no_limit_up_to": None},
        {"column": "python-mcp/call-only", "kind": "text", "largest_accepted": None, "no_limit_up_to": 67_108_864},
        {"column": "ts-sdk/call-only", "kind": "cjk", "largest_accepted": 5, "no_limit_up_to": None},
    ]
    result = {"content": [{"type": "text", "text": "x"}]}
    found = _checks({}, result, frame_bytes=10_275_000, boundaries=boundaries)["frame-size"]
    assert found == [
        ("fault", "9.8 MiB: 9.8 MiB above tiny/default's 1,000-byte stdio limit"),
        ("ok", "9.8 MiB: 210,760 bytes below ts-sdk/call-only's 10,485,760-byte stdio limit"),
    ]
    assert _checks({}, result, boundaries=())["frame-size"][0][0] == "note", "no probe to compare with"
