"""The channel derivation, on model views shaped like the ones real frameworks produced."""

from __future__ import annotations

import json

import pytest

from harness import model_view

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
    assert model_view.channel(value, DIVERGE) == expected


def test_text_equal_to_the_json_of_the_structured_content_counts_as_text():
    same = {"content": [{"type": "text", "text": json.dumps(ACCOUNT)}], "structuredContent": ACCOUNT}
    assert model_view.channel(json.dumps(ACCOUNT), same) == "text"
    assert model_view.channel(ACCOUNT, same) == "structured"


def test_a_parsed_json_text_block_counts_as_text():
    no_structured = {"content": [{"type": "text", "text": json.dumps(ACCOUNT)}]}
    assert model_view.channel(ACCOUNT, no_structured) == "text"
    assert model_view.channel(OTHER, DIVERGE) == "text"


def test_a_dump_with_an_empty_text_and_is_error_false_is_not_an_error_text():
    empty = {"content": [{"type": "text", "text": ""}]}
    dump = "meta=None content=[TextContent(type='text', text='', annotations=None, meta=None)] is_error=False"
    assert model_view.channel(dump, empty) == "other"


def test_a_python_repr_of_a_parsed_json_text_counts_as_text():
    no_structured = {"content": [{"type": "text", "text": json.dumps(ACCOUNT)}]}
    assert model_view.channel([{"type": "text", "text": f"Observation:\n{ACCOUNT!r}"}], no_structured) == "text"


def test_error_seen_by_marker_or_by_the_flag_in_the_value():
    plain = {"value": [{"type": "text", "text": ERROR_TEXT}], "error_flag": None}
    assert model_view.channel(plain["value"], ISERROR) == "text"
    assert model_view.error_seen(plain) is False
    assert model_view.error_seen({**plain, "error_flag": True}) is True
    assert model_view.error_seen({"value": "content=[...] is_error=True", "error_flag": None}) is True
    assert model_view.error_seen({"value": {"content": [], "isError": True}, "error_flag": False}) is True
    assert model_view.error_seen({"value": {"content": [], "isError": False}, "error_flag": False}) is False
