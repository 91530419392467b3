"""The tools the reference server exposes and the account data they describe."""

from __future__ import annotations

import json
from typing import Any

TOOL_NAME = "get_account_balance"
FOLLOWUP_TOOL = "echo"

ACCOUNT: dict[str, Any] = {
    "account_id": "ACC-4471",
    "balance_minor": 4071877,
    "currency": "USD",
    "as_of": "2026-01-15T09:30:00Z",
}
"""The one correct answer of ``get_account_balance``."""

OTHER_ACCOUNT: dict[str, Any] = {
    "account_id": "ACC-5518",
    "balance_minor": 129900,
    "currency": "EUR",
    "as_of": "2026-01-15T09:30:00Z",
}
"""A plausible, schema-valid answer about the wrong account (``corrupt-plausible``, ``diverge``)."""

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "account_id": {"type": "string"},
        "balance_minor": {"type": "integer"},
        "currency": {"type": "string"},
        "as_of": {"type": "string"},
    },
    "required": ["account_id", "balance_minor", "currency", "as_of"],
    "additionalProperties": False,
}


def text_of(data: Any) -> str:
    """The text block that serializes ``data`` (what a well-behaved server puts in ``content``)."""
    return json.dumps(data, separators=(", ", ": "))


def tool_definitions(
    schema_mode: str, output_schema: dict[str, Any] | None = None, recorded: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The ``tools/list`` entries; ``outputSchema`` (:data:`OUTPUT_SCHEMA`, or a case's own) only
    when ``schema_mode == "advertised"``. ``recorded``: a recorded tool's entry, listed in place of
    ``get_account_balance`` as its server listed it (without its outputSchema unless advertised)."""
    balance: dict[str, Any]
    if recorded is not None:
        balance = {
            key: value for key, value in recorded.items() if key != "outputSchema" or schema_mode == "advertised"
        }
    else:
        balance = {
            "name": TOOL_NAME,
            "description": "Current balance of a customer account, in minor units.",
            "inputSchema": {
                "type": "object",
                "properties": {"account_id": {"type": "string"}},
                "required": ["account_id"],
            },
        }
        if schema_mode == "advertised":
            balance["outputSchema"] = OUTPUT_SCHEMA if output_schema is None else output_schema
    echo = {
        "name": FOLLOWUP_TOOL,
        "description": "Returns its text argument (the harness's follow-up call).",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    }
    return [balance, echo]
