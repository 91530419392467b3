"""The reference server emits each case's exact frame (observed through the raw adapter)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness import catalog
from servers.reference.elide import elide

from .conftest import REPO

ACCOUNT = {"account_id": "ACC-4471", "balance_minor": 4071877, "currency": "USD", "as_of": "2026-01-15T09:30:00Z"}
OTHER = {"account_id": "ACC-5518", "balance_minor": 129900, "currency": "EUR", "as_of": "2026-01-15T09:30:00Z"}
FULL = json.dumps(ACCOUNT, separators=(", ", ": "))
ERROR_TEXT = "Ledger service unavailable: could not read balance of ACC-4471"


def text(data: object) -> dict[str, str]:
    return {"type": "text", "text": json.dumps(data, separators=(", ", ": "))}


# The exact results, written out independently of servers/reference/cases.py.
EXPECTED_SCHEMA_RESULTS = {
    "ok": {"content": [text(ACCOUNT)], "structuredContent": ACCOUNT},
    "no-structured": {"content": [text(ACCOUNT)]},
    "type-swap": {"content": [text({**ACCOUNT, "balance_minor": "4071877"})],
                  "structuredContent": {**ACCOUNT, "balance_minor": "4071877"}},
    "drop-required": {"content": [text({k: v for k, v in ACCOUNT.items() if k != "currency"})],
                      "structuredContent": {k: v for k, v in ACCOUNT.items() if k != "currency"}},
    "extra-field": {"content": [text({**ACCOUNT, "branch": "Zurich-3"})],
                    "structuredContent": {**ACCOUNT, "branch": "Zurich-3"}},
    "wrong-container": {"content": [text([ACCOUNT])], "structuredContent": [ACCOUNT]},
    "null-structured": {"content": [text(ACCOUNT)], "structuredContent": None},
    "iserror-bad-structured": {"content": [{"type": "text", "text": ERROR_TEXT}],
                               "structuredContent": {"error": "ledger_unavailable"}, "isError": True},
    "iserror-plain": {"content": [{"type": "text", "text": ERROR_TEXT}], "isError": True},
    "iserror-valid-structured": {"content": [text(ACCOUNT)], "structuredContent": ACCOUNT, "isError": True},
    "diverge": {"content": [text(OTHER)], "structuredContent": ACCOUNT},
    "empty-content-structured": {"content": [], "structuredContent": ACCOUNT},
    "missing-content": {"structuredContent": ACCOUNT},
    "corrupt-plausible": {"content": [text(OTHER)], "structuredContent": OTHER},
    "error": {"content": [{"type": "text",
                           "text": "Error executing tool get_account_balance: account ACC-4471 is locked"}],
              "isError": True},
    "empty-string": {"content": [{"type": "text", "text": ""}]},
    "truncate": {"content": [{"type": "text", "text": FULL[: len(FULL) // 2]}]},
    "latency": {"content": [text(ACCOUNT)], "structuredContent": ACCOUNT},
}

# (content block type, field holding the payload, payload length in characters, UTF-8 bytes)
EXPECTED_SIZES = {
    "text-9mib": ("text", "text", 9_437_184, 9_437_184),
    "text-10mib": ("text", "text", 10_485_760, 10_485_760),
    "text-12mib": ("text", "text", 12_582_912, 12_582_912),
    "cjk-3m": ("text", "text", 3_000_000, 9_000_000),
    "cjk-3.5m": ("text", "text", 3_500_000, 10_500_000),
    "blob-7mib": ("image", "data", 9_786_712, 9_786_712),
    "blob-8mib": ("image", "data", 11_184_812, 11_184_812),
    "three-4mib": ("text", "text", 4_194_304, 4_194_304),
}


def test_server_implements_exactly_the_catalog():
    listed = subprocess.run([sys.executable, str(REPO / "servers" / "reference"), "--list-cases"],
                            capture_output=True, text=True, check=True).stdout
    assert json.loads(listed) == [case.id for case in catalog.CASES]


def test_expectations_cover_every_case():
    covered = set(EXPECTED_SCHEMA_RESULTS) | set(EXPECTED_SIZES) | {"many-blocks"}
    assert covered == {case.id for case in catalog.CASES}


@pytest.fixture(scope="module")
def raw_run(tmp_path_factory):
    from .conftest import Checkout

    checkout = Checkout(tmp_path_factory.mktemp("raw") / "checkout", ["raw-jsonrpc"])
    checkout.harness("run", "--run-id", "raw")
    return {record["case"] + "/" + record["schema"]: record for record in checkout.records("raw")}


@pytest.mark.parametrize("case_id", sorted(EXPECTED_SCHEMA_RESULTS))
@pytest.mark.parametrize("schema", ["advertised", "hidden"])
def test_schema_case_frames(raw_run, case_id, schema):
    record = raw_run[f"{case_id}/{schema}"]
    [call] = record["observation"]["calls"]
    assert call["status"] == "returned"
    assert call["result"] == EXPECTED_SCHEMA_RESULTS[case_id]
    listed = [e for e in record["journal"] if e.get("event") == "recv" and e.get("method") == "initialize"]
    assert len(listed) == 1


@pytest.mark.parametrize("case_id", sorted(EXPECTED_SIZES))
def test_size_case_frames(raw_run, case_id):
    block_type, field, length, utf8_bytes = EXPECTED_SIZES[case_id]
    record = raw_run[f"{case_id}/none"]
    calls = record["observation"]["calls"]
    assert len(calls) == (3 if case_id == "three-4mib" else 1)
    for call in calls:
        [block] = call["result"]["content"]
        assert block["type"] == block_type
        assert block[field]["length"] == length
        assert block[field]["utf8_bytes"] == utf8_bytes
    sends = [e for e in record["journal"] if e.get("event") == "send" and e.get("bytes", 0) > utf8_bytes]
    assert len(sends) == len(calls), "every big answer is journaled with its frame size"
    wire = record["observation"]["wire"]["frames"]
    assert max(frame["bytes"] for frame in wire) == max(e["bytes"] for e in sends)


def test_many_blocks(raw_run):
    [call] = raw_run["many-blocks/none"]["observation"]["calls"]
    content = call["result"]["content"]
    assert content["$elided"] == "array" and content["length"] == 100_000
    assert content["head"][0] == {"type": "text", "text": "block 000000"}


def test_elision_is_deterministic_and_null_insensitive():
    blocks = [{"type": "text", "text": f"b{i}"} for i in range(100)]
    with_nulls = [{**block, "annotations": None} for block in blocks]
    assert elide(blocks)["sha256"] == elide(with_nulls)["sha256"]
    assert elide("x" * 5000)["length"] == 5000 and elide("short") == "short"
