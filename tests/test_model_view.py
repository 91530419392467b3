"""The channel derivation, on model views shaped like the ones real frameworks produced."""

from __future__ import annotations

import json

import pytest

from harness.classify import model_input
from harness.run import observation

ACCOUNT = {"account_id": "ACC-4471", "balance_minor": 4071877, "currency": "USD", "as_of": "2026-01-15T09:30:00Z"}
OTHER = {"account_id": "ACC-5518", "balance_minor": 129900, "currency": "EUR", "as_of": "2026-01-15T09:30:00Z"}
TEXT = json.dumps(OTHER, separators=(", ", ": "))
DIVERGE = {"content": [{"type": "text", "text": TEXT}], "structuredContent": ACCOUNT}
ERROR_TEXT = "Ledger service unavailable: could not read balance of ACC-4471"
ISERROR = {"content": [{"type": "text", "text": ERROR_TEXT}], "isError": True}


@pytest.mark.parametrize(
    "value, expected",
    [
        # pydantic-ai: the structured content as a JSON value
        (ACCOUNT, "structured"),
        # AI SDK: {"type": "content", ...} parts with the text, or {"type": "json", ...}
        ({"type": "content", "value": [{"type": "text", "text": TEXT}]}, "text"),
        ({"type": "json", "value": ACCOUNT}, "structured"),
        # LangChain.js: one JSON string holding the text part and the structured content
        (json.dumps({"type": "text", "text": TEXT, "structuredContent": ACCOUNT}, separators=(",", ":")), "both"),
        # llama-index: str() of the pydantic result
        (
            f"meta=None content=[TextContent(type='text', text='{TEXT}', annotations=None, meta=None)] "
            f"structured_content={ACCOUNT!r} is_error=False",
            "repr",
        ),
        # smolagents with structured output: a Python dict repr after a prefix
        ([{"type": "text", "text": f"Observation:\n{ACCOUNT!r}"}], "structured"),
        # compact JSON of the structured content (JavaScript)
        ({"type": "text", "text": json.dumps(ACCOUNT, separators=(",", ":"))}, "structured"),
        # the framework's own message in place of the result
        ("An error occurred while running the tool. Please try again.", "error-text"),
        ({"type": "text", "text": "[]"}, "empty"),
        ([{"type": "text", "text": "", "id": "lc_id-0"}], "empty"),
        ('{"content":[{"type":"text","text":""}]}', "empty"),
        ([], "empty"),
        (None, "empty"),
        ("[non-text content omitted]", "other"),
        # llama-index: the SDK's message when the structured content is missing
        ("Tool get_account_balance has an output schema but did not return structured content", "error-text"),
    ],
)
def test_channel_of_diverge(value, expected):
    assert model_input.channel(value, DIVERGE) == expected


def test_text_equal_to_the_json_of_the_structured_content_counts_as_text():
    same = {"content": [{"type": "text", "text": json.dumps(ACCOUNT)}], "structuredContent": ACCOUNT}
    assert model_input.channel(json.dumps(ACCOUNT), same) == "text"
    assert model_input.channel(ACCOUNT, same) == "structured"


def test_a_parsed_json_text_block_counts_as_text():
    no_structured = {"content": [{"type": "text", "text": json.dumps(ACCOUNT)}]}
    assert model_input.channel(ACCOUNT, no_structured) == "text"
    assert model_input.channel(OTHER, DIVERGE) == "text"


def test_a_dump_with_an_empty_text_and_is_error_false_is_not_an_error_text():
    empty = {"content": [{"type": "text", "text": ""}]}
    dump = "meta=None content=[TextContent(type='text', text='', annotations=None, meta=None)] is_error=False"
    assert model_input.channel(dump, empty) == "other"


def test_a_python_repr_of_a_parsed_json_text_counts_as_text():
    no_structured = {"content": [{"type": "text", "text": json.dumps(ACCOUNT)}]}
    assert model_input.channel([{"type": "text", "text": f"Observation:\n{ACCOUNT!r}"}], no_structured) == "text"


def test_error_seen_by_marker_or_by_the_flag_in_the_value():
    plain = {"value": [{"type": "text", "text": ERROR_TEXT}], "error_flag": None}
    assert model_input.channel(plain["value"], ISERROR) == "text"
    assert model_input.error_seen(plain) is False
    assert model_input.error_seen({**plain, "error_flag": True}) is True
    assert model_input.error_seen({"value": "content=[...] is_error=True", "error_flag": None}) is True
    assert model_input.error_seen({"value": {"content": [], "isError": True}, "error_flag": False}) is True
    assert model_input.error_seen({"value": {"content": [], "isError": False}, "error_flag": False}) is False


ELIDED_TEXT = {"$elided": "string", "length": 9437184, "utf8_bytes": 9437184, "sha256": "0" * 64, "head": "ACC-4471"}
"""A 9 MiB text block as the harness keeps it: the host driver's ``reach`` says how much the model read."""
BIG = {"content": [{"type": "text", "text": ELIDED_TEXT}]}


def _reach(head: int, tail: int, kept: int, words: str = "") -> dict:
    return {
        "payloads": [{"block": 0, "type": "text", "chars": 9437184, "head": head, "tail": tail, "kept": kept}],
        "words": words,
    }


@pytest.mark.parametrize(
    "reach, expected",
    [
        (_reach(9437184, 9437184, 9437184), "all 9,437,184 characters"),
        (_reach(0, 0, 0), "none of 9,437,184 characters"),
        (_reach(8000, 32000, 40000), "40,000 of 9,437,184 characters (the first 8,000 and the last 32,000)"),
        (_reach(389, 360, 389), "389 of 9,437,184 characters (the first 389)"),
        (_reach(0, 500, 500), "500 of 9,437,184 characters (the last 500)"),
        (_reach(31990, 32000, 40000), "40,000 of 9,437,184 characters"),
        (None, None),
    ],
)
def test_kept_says_how_much_of_a_long_payload_the_model_read(reach, expected):
    assert model_input.kept(reach) == expected


def test_a_text_payload_the_model_read_part_of_is_the_text_channel():
    cut = {"output": {**ELIDED_TEXT, "length": 40340, "sha256": "1" * 64, "head": "Output too large."}}
    assert model_input.channel(cut, BIG, _reach(8000, 32000, 40000)) == "text"
    note = "Error: result exceeds maximum allowed tokens. Output has been saved to /tmp/x.txt"
    assert model_input.channel(note, BIG, _reach(0, 0, 0, note)) == "error-text"
    assert model_input.channel("The output was truncated. Full output saved to /tmp/x", BIG, _reach(0, 0, 0)) == "other"


RESOURCE_TEXT = json.dumps(ACCOUNT)
RESOURCE_LINK = {
    "content": [
        {"type": "text", "text": RESOURCE_TEXT},
        {"type": "resource_link", "uri": "ledger://accounts/ACC-4471", "name": "ACC-4471"},
    ]
}


def test_blocks_names_which_content_blocks_reached_the_model():
    assert model_input.blocks(RESOURCE_TEXT, RESOURCE_LINK) == "text: yes; resource_link: no"
    linked = f"{RESOURCE_TEXT}\n[Resource link: ledger://accounts/ACC-4471]"
    assert model_input.blocks(linked, RESOURCE_LINK) == "text: yes; resource_link: yes"
    embedded = {"content": [{"type": "resource", "resource": {"uri": "ledger://a", "text": RESOURCE_TEXT}}]}
    serialized = json.dumps([{"type": "input_text", "text": json.dumps(embedded["content"][0])}])
    assert model_input.blocks(serialized, embedded) == "resource: yes"
    assert model_input.channel(serialized, embedded) == "text"
    assert model_input.blocks(RESOURCE_TEXT, {"content": [{"type": "text", "text": RESOURCE_TEXT}]}) is None
    image = {"content": [{"type": "image", "data": ELIDED_TEXT, "mimeType": "image/png"}]}
    image_reach = {
        "payloads": [{"block": 0, "type": "image", "chars": 9, "head": 9, "tail": 9, "kept": 9}],
        "words": "",
    }
    assert model_input.blocks("[image]", image, image_reach) == "image: yes"
    assert model_input.blocks("[image]", image) == "image: ?"


def test_a_block_without_a_type_still_has_its_text():
    untyped = {"content": [{"text": RESOURCE_TEXT}]}
    assert model_input.sent_texts(untyped) == [RESOURCE_TEXT]
    assert model_input.blocks(RESOURCE_TEXT, untyped) == "(no type): yes"


def _observation(model_view: dict) -> dict:
    step = {"status": "ok", "error": None, "duration_ms": 1.0}
    call = {
        "tool": "t",
        "status": "returned",
        "result": "x",
        "error": None,
        "duration_ms": 1.0,
        "model_view": model_view,
    }
    return {
        "contract": 1,
        "initialize": step,
        "list_tools": step,
        "calls": [call],
        "followup": None,
        "close": step,
        "transport_errors": [],
    }


@pytest.mark.parametrize(
    "extra, problem",
    [
        (
            {"reach": {"payloads": [{"block": 0, "chars": -1, "head": 0, "tail": 0, "kept": 0}], "words": ""}},
            "calls[0].model_view.reach.payloads[0].chars: expected a count, got -1",
        ),
        ({"reach": {"payloads": [], "words": None}}, "calls[0].model_view.reach.words: expected a string"),
        ({"output_schema_shown": "yes"}, "calls[0].model_view.output_schema_shown: expected a boolean or null"),
    ],
)
def test_a_host_model_view_with_a_bad_measurement_is_one_line_naming_the_field(tmp_path, extra, problem):
    good = {"value": "x", "error_flag": None, "error_flag_field": None, "message": None}
    observation.validate(_observation({**good, "reach": None, "output_schema_shown": False}), tmp_path, framework=True)
    with pytest.raises(observation.ObservationError) as raised:
        observation.validate(_observation({**good, **extra}), tmp_path, framework=True)
    assert str(raised.value) == f"{tmp_path}: {problem}"
