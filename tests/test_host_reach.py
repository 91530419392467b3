"""The host driver's measurements of what a host put in front of its model (clients/_support/host_measure.mjs
``reach`` and ``schemaShown``), on values shaped like the ones the pinned hosts produced (docs/hosts.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from .conftest import REPO

NODE = shutil.which("node")
LINE = "ACC-4471 balance_minor=4071877 currency=USD as_of=2026-01-15T09:30:00Z; "
PAYLOAD = (LINE * 2000)[:140_000]


def run(function: str, *args: Any) -> Any:
    if NODE is None:
        pytest.skip("node is not on PATH")
    module = json.dumps((REPO / "clients" / "_support" / "host_measure.mjs").as_uri())
    script = (
        f"import fs from 'node:fs'; import {{ {function} }} from {module};"
        f"const args = JSON.parse(fs.readFileSync(0, 'utf8'));"
        f"process.stdout.write(JSON.stringify({function}(...args)));"
    )
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", script],
        input=json.dumps(args),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def sent(payload: str = PAYLOAD) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": payload}]}


def test_a_head_and_a_tail_with_the_hosts_words_between():
    marker = "\n… [9,397,225 characters omitted] …\n"
    value = {
        "output": "Output too large. Showing first 8,000 and last 32,000 characters.\n"
        + PAYLOAD[:8000]
        + marker
        + PAYLOAD[-32000:]
    }
    got = run("reach", value, sent())
    assert got["payloads"] == [
        {"block": 0, "type": "text", "chars": 140_000, "head": 8000, "tail": 32000, "kept": 40000}
    ]
    assert (
        got["words"]
        == "Output too large. Showing first 8,000 and last 32,000 characters. … … [9,397,225 characters omitted] …"
    )


def test_nothing_of_the_payload_only_the_hosts_words():
    note = "Error: result exceeds maximum allowed tokens. Output has been saved to /tmp/x.txt"
    got = run("reach", [{"type": "text", "text": note}], sent())
    assert got["payloads"][0]["kept"] == 0 and got["words"] == note


def test_the_whole_payload_and_a_repeating_payloads_head_inside_its_tail():
    whole = run("reach", PAYLOAD, sent())
    assert whole["payloads"][0]["kept"] == 140_000 and whole["words"] == ""
    head_only = run("reach", PAYLOAD[:389] + "...\n[CONTENT TRUNCATED]", sent())
    assert head_only["payloads"][0]["head"] == 389 and head_only["payloads"][0]["kept"] == 389


def test_short_results_and_tags_are_not_measured():
    assert run("reach", "ok", sent("short")) is None
    got = run("reach", [{"type": "input_text", "text": PAYLOAD[:5000]}], sent())
    assert got["words"] == "", "the part's type is a tag, not the host's words"


TOOLS_LIST = {
    "event": "send",
    "message": {
        "result": {
            "tools": [
                {
                    "name": "get_account_balance",
                    "inputSchema": {"type": "object", "properties": {"account_id": {"type": "string"}}},
                    "outputSchema": {
                        "type": "object",
                        "properties": {"account_id": {}, "balance_minor": {}, "currency": {}, "as_of": {}},
                    },
                },
                {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {}}}},
            ]
        }
    },
}


def test_the_output_schema_is_shown_when_its_own_property_names_are_in_the_request():
    bare = {"tools": [{"name": "mcp__ref__get_account_balance", "input_schema": {"properties": {"account_id": {}}}}]}
    described = {"tools": [{"name": "t", "description": "Returns {balance_minor, currency, as_of}."}]}
    partly = {"tools": [{"name": "t", "description": "Returns the currency."}]}
    assert run("schemaShown", bare, [TOOLS_LIST], "get_account_balance") is False
    assert run("schemaShown", described, [TOOLS_LIST], "get_account_balance") is True
    assert run("schemaShown", partly, [TOOLS_LIST], "get_account_balance") is False
    assert run("schemaShown", described, [TOOLS_LIST], "echo") is None, "echo has no outputSchema"
    assert run("schemaShown", described, [], "get_account_balance") is None, "nothing listed"
