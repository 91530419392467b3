"""The reference server emits each case's exact frame (observed through the raw adapter), and lists
its tools as the schema mode says (over stdio directly: the raw adapter never calls tools/list)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.matrix import catalog
from servers.reference.elide import elide

from .conftest import REPO
from .test_http_transport import INITIALIZE

ACCOUNT = {"account_id": "ACC-4471", "balance_minor": 4071877, "currency": "USD", "as_of": "2026-01-15T09:30:00Z"}
OTHER = {"account_id": "ACC-5518", "balance_minor": 129900, "currency": "EUR", "as_of": "2026-01-15T09:30:00Z"}
FULL = json.dumps(ACCOUNT, separators=(", ", ": "))
ERROR_TEXT = "Ledger service unavailable: could not read balance of ACC-4471"
OUTPUT_SCHEMA = {
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


def text(data: object) -> dict[str, str]:
    return {"type": "text", "text": json.dumps(data, separators=(", ", ": "))}


# The exact results, written out independently of servers/reference/cases.py.
EXPECTED_SCHEMA_RESULTS = {
    "ok": {"content": [text(ACCOUNT)], "structuredContent": ACCOUNT},
    "no-structured": {"content": [text(ACCOUNT)]},
    "type-swap": {
        "content": [text({**ACCOUNT, "balance_minor": "4071877"})],
        "structuredContent": {**ACCOUNT, "balance_minor": "4071877"},
    },
    "drop-required": {
        "content": [text({k: v for k, v in ACCOUNT.items() if k != "currency"})],
        "structuredContent": {k: v for k, v in ACCOUNT.items() if k != "currency"},
    },
    "extra-field": {
        "content": [text({**ACCOUNT, "branch": "Zurich-3"})],
        "structuredContent": {**ACCOUNT, "branch": "Zurich-3"},
    },
    "wrong-container": {"content": [text([ACCOUNT])], "structuredContent": [ACCOUNT]},
    "null-structured": {"content": [text(ACCOUNT)], "structuredContent": None},
    "iserror-bad-structured": {
        "content": [{"type": "text", "text": ERROR_TEXT}],
        "structuredContent": {"error": "ledger_unavailable"},
        "isError": True,
    },
    "iserror-plain": {"content": [{"type": "text", "text": ERROR_TEXT}], "isError": True},
    "iserror-valid-structured": {"content": [text(ACCOUNT)], "structuredContent": ACCOUNT, "isError": True},
    "diverge": {"content": [text(OTHER)], "structuredContent": ACCOUNT},
    "empty-content-structured": {"content": [], "structuredContent": ACCOUNT},
    "missing-content": {"structuredContent": ACCOUNT},
    "corrupt-plausible": {"content": [text(OTHER)], "structuredContent": OTHER},
    "error": {
        "content": [{"type": "text", "text": "Error executing tool get_account_balance: account ACC-4471 is locked"}],
        "isError": True,
    },
    "empty-string": {"content": [{"type": "text", "text": ""}]},
    "truncate": {"content": [{"type": "text", "text": FULL[: len(FULL) // 2]}]},
    "latency": {"content": [text(ACCOUNT)], "structuredContent": ACCOUNT},
    "structured-array": {"content": [text([ACCOUNT])], "structuredContent": [ACCOUNT]},
    "structured-string": {"content": [text("ACC-4471: 40718.77 USD")], "structuredContent": "ACC-4471: 40718.77 USD"},
    "structured-number": {"content": [text(4071877)], "structuredContent": 4071877},
    "structured-null": {"content": [{"type": "text", "text": "null"}], "structuredContent": None},
    "schema-ref-defs": {"content": [text(ACCOUNT)], "structuredContent": ACCOUNT},
    "schema-ref-unresolvable": {"content": [text(ACCOUNT)], "structuredContent": ACCOUNT},
    "schema-composition-heavy": {"content": [text(ACCOUNT)], "structuredContent": ACCOUNT},
}
OWN_OUTPUT_SCHEMAS = {
    "structured-array": lambda schema: schema == {"type": "array", "items": OUTPUT_SCHEMA},
    "structured-string": lambda schema: schema == {"type": "string"},
    "structured-number": lambda schema: schema == {"type": "integer"},
    "structured-null": lambda schema: schema == {"anyOf": [OUTPUT_SCHEMA, {"type": "null"}]},
    "schema-ref-defs": lambda schema: schema["$ref"] == "#/$defs/account" and "account" in schema["$defs"],
    "schema-ref-unresolvable": lambda schema: schema["properties"]["currency"]["$ref"].startswith("https://"),
    "schema-composition-heavy": lambda schema: (
        len(schema["$defs"]) == 17 and schema["$defs"]["level0"]["allOf"] == [{"$ref": "#/$defs/level1"}] * 2
    ),
}
"""The outputSchema each case with a schema of its own lists (advertised mode)."""

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
    listed = subprocess.run(
        [sys.executable, str(REPO / "servers" / "reference"), "--list-cases"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(listed) == [case.id for case in catalog.CASES]


URI = "ledger://accounts/ACC-4471"
EXPECTED_PROTOCOL_RESULTS = {
    "unknown-content-type": {
        "content": [{"type": "hologram", "data": "SG9sb2dyYW0=", "mimeType": "model/hologram"}, text(ACCOUNT)]
    },
    "content-missing-type": {"content": [{"text": FULL}]},
    "resource-link": {
        "content": [
            text(ACCOUNT),
            {"type": "resource_link", "uri": URI, "name": "ACC-4471 balance", "mimeType": "application/json"},
        ]
    },
    "embedded-resource": {
        "content": [{"type": "resource", "resource": {"uri": URI, "mimeType": "application/json", "text": FULL}}]
    },
}
EXPECTED_PROTOCOL_ERRORS = {
    "jsonrpc-error": (-32603, "Internal error: ledger unavailable"),
    "jsonrpc-error-data": (-32603, "Internal error: ledger unavailable"),
    "error-no-message": (-32603, "None"),
}
OTHER_PROTOCOL_CASES = {"version-mismatch", "audio"}
MODERN_ONLY_CASES = {case.id for case in catalog.CASES if case.protocols == ("2026-07-28",)}
TRANSPORT_CASES = {case.id for case in catalog.CASES if case.family == "transport"}


def test_expectations_cover_every_case():
    covered = (
        set(EXPECTED_SCHEMA_RESULTS)
        | set(EXPECTED_SIZES)
        | {"many-blocks"}
        | set(EXPECTED_PROTOCOL_RESULTS)
        | set(EXPECTED_PROTOCOL_ERRORS)
        | OTHER_PROTOCOL_CASES
        | MODERN_ONLY_CASES
        | TRANSPORT_CASES
    )
    assert covered == {case.id for case in catalog.CASES}


@pytest.fixture(scope="module")
def raw_run(tmp_path_factory):
    from .conftest import Checkout

    checkout = Checkout(tmp_path_factory.mktemp("raw") / "checkout", ["raw-jsonrpc"])
    checkout.harness(
        "run",
        "--run-id",
        "raw",
        "--transport",
        "stdio",
        "--family",
        "schema",
        "--family",
        "size",
        "--family",
        "protocol",
        "--protocol",
        "2025-11-25",
    )
    return {record["case"] + "/" + record["schema"]: record for record in checkout.records("raw")}


@pytest.mark.parametrize("case_id", sorted(EXPECTED_SCHEMA_RESULTS))
@pytest.mark.parametrize("schema", ["advertised", "hidden"])
def test_schema_case_frames(raw_run, case_id, schema):
    """The call's result does not depend on the schema mode. The raw adapter calls without listing
    first, so what each mode lists is checked by ``test_tools_list_schema_modes``."""
    record = raw_run[f"{case_id}/{schema}"]
    [call] = record["observation"]["calls"]
    assert call["status"] == "returned"
    assert call["result"] == EXPECTED_SCHEMA_RESULTS[case_id]
    [start] = [e for e in record["journal"] if e.get("event") == "start"]
    assert start["schema"] == schema


HANDSHAKE = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
"""initialize (id 1) and notifications/initialized, as a client opens a stdio session."""


def list_tools(case_id: str, schema: str, journal: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """initialize, notifications/initialized and tools/list sent to the server over stdio; returns the
    tools/list response and the server's journal."""
    frames = [*HANDSHAKE, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "servers" / "reference"),
            "--case",
            case_id,
            "--schema",
            schema,
            "--journal",
            str(journal),
        ],
        input="".join(json.dumps(frame) + "\n" for frame in frames).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    [listed] = [m for m in map(json.loads, done.stdout.splitlines()) if m.get("id") == 2]
    return listed, [json.loads(line) for line in journal.read_text().splitlines()]


@pytest.mark.parametrize("case_id", sorted(EXPECTED_SCHEMA_RESULTS))
@pytest.mark.parametrize("schema", ["advertised", "hidden", "none"])
def test_tools_list_schema_modes(tmp_path, case_id, schema):
    """get_account_balance's outputSchema is in the tools/list answer in mode advertised only, and
    the journal (what the harness classifies with) records exactly that answer."""
    listed, journal = list_tools(case_id, schema, tmp_path / "journal.jsonl")
    [balance, echo] = listed["result"]["tools"]
    assert (balance["name"], echo["name"]) == ("get_account_balance", "echo")
    if schema == "advertised":
        own = OWN_OUTPUT_SCHEMAS.get(case_id)
        assert own(balance["outputSchema"]) if own else balance["outputSchema"] == OUTPUT_SCHEMA
    else:
        assert "outputSchema" not in balance
    assert "outputSchema" not in echo
    assert [e["id"] for e in journal if e.get("event") == "recv" and e.get("method") == "tools/list"] == [2]
    [sent] = [e for e in journal if e.get("event") == "send" and e.get("id") == 2]
    assert sent["message"] == listed


def test_results_dir_keeps_each_result_whole_and_the_journal_names_it(tmp_path):
    """``--results-dir`` (agent host cells): every result the server sends is written whole, the
    journal stays elided and names the file."""
    frames = [
        *HANDSHAKE,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "get_account_balance", "arguments": {"account_id": "ACC-4471"}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}},
    ]
    journal, sent = tmp_path / "journal.jsonl", tmp_path / "sent"
    command = [sys.executable, str(REPO / "servers" / "reference"), "--case", "text-9mib", "--schema", "none"]
    command += ["--journal", str(journal), "--results-dir", str(sent)]
    subprocess.run(
        command,
        input="".join(json.dumps(frame) + "\n" for frame in frames).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    sends = {e["id"]: e for e in map(json.loads, journal.read_text().splitlines()) if e["event"] == "send"}
    assert [sends[i]["result_file"] for i in (1, 2, 3)] == ["result-1.json", "result-2.json", "result-3.json"]
    big = json.loads((sent / "result-2.json").read_text())
    assert big["content"][0]["text"] == (ACCOUNT_LINE * 200_000)[: 9 * 1024 * 1024]
    assert sends[2]["message"]["result"]["content"][0]["text"]["$elided"] == "string"
    assert json.loads((sent / "result-3.json").read_text()) == {"content": [{"type": "text", "text": "hi"}]}


ACCOUNT_LINE = "ACC-4471 balance_minor=4071877 currency=USD as_of=2026-01-15T09:30:00Z; "


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


@pytest.mark.parametrize("case_id", sorted(EXPECTED_PROTOCOL_RESULTS))
def test_protocol_result_frames(raw_run, case_id):
    [call] = raw_run[f"{case_id}/none"]["observation"]["calls"]
    assert call["result"] == EXPECTED_PROTOCOL_RESULTS[case_id]


@pytest.mark.parametrize("case_id", sorted(EXPECTED_PROTOCOL_ERRORS))
def test_protocol_error_frames(raw_run, case_id):
    [call] = raw_run[f"{case_id}/none"]["observation"]["calls"]
    assert call["status"] == "raised"
    assert (call["error"]["code"], call["error"]["message"]) == EXPECTED_PROTOCOL_ERRORS[case_id]
    [sent] = [e for e in raw_run[f"{case_id}/none"]["journal"] if e.get("event") == "send" and e.get("id") == 2]
    assert ("message" in sent["message"]["error"]) is (case_id != "error-no-message")


def test_version_mismatch_and_audio(raw_run):
    assert raw_run["version-mismatch/none"]["observation"]["initialize"]["protocol_version"] == "1999-01-01"
    [call] = raw_run["audio/none"]["observation"]["calls"]
    assert [block["type"] for block in call["result"]["content"]] == ["text", "audio"]
    assert call["result"]["content"][1]["mimeType"] == "audio/wav"


@pytest.fixture(scope="module")
def transport_run(tmp_path_factory):
    from .conftest import Checkout

    checkout = Checkout(tmp_path_factory.mktemp("raw-transport") / "checkout", ["raw-jsonrpc"])
    checkout.harness(
        "run", "--run-id", "t", "--family", "transport", "--protocol", "2025-11-25", "--budget-scale", "0.3"
    )
    assert checkout.processes_left() == []
    return {record["case"]: record for record in checkout.records("t")}


def events(record, name):
    return [event for event in record["journal"] if event.get("event") == name]


def parse_errors(record):
    return [frame for frame in record["observation"]["wire"]["frames"] if frame["parse_error"]]


def test_stdout_noise_and_banner_are_non_json_lines(transport_run):
    for case_id in ("stdout-noise", "stdout-banner"):
        record = transport_run[case_id]
        assert len(parse_errors(record)) == 1, case_id
        assert record["observation"]["calls"][0]["status"] == "returned"
        [raw] = events(record, "send-raw")
        assert raw["bytes"] == parse_errors(record)[0]["bytes"]


def test_stderr_flood_writes_8_mib(transport_run):
    record = transport_run["stderr-flood"]
    assert sum(e["bytes"] for e in events(record, "send-raw") if e["stream"] == "stderr") == 8 * 1024 * 1024


def test_broken_frames(transport_run):
    assert len(parse_errors(transport_run["malformed-frame"])) == 1
    partial = transport_run["partial-frame-eof"]
    assert partial["observation"]["calls"][0]["error"]["type"] == "EOFError"
    assert events(partial, "exit")[-1]["reason"] == "fault"
    exited = transport_run["exit-mid-call"]
    assert exited["observation"]["calls"][0]["error"]["type"] == "EOFError"
    assert events(exited, "exit")[-1]["detail"].startswith("exit-mid-call")


def test_unanswered_and_misaddressed_calls(transport_run):
    for case_id in ("no-response", "wrong-id"):
        record = transport_run[case_id]
        assert record["observation"]["calls"][0]["error"]["type"] == "TimeoutError", case_id
        assert record["observation"]["followup"]["status"] == "returned", case_id
    assert events(transport_run["no-response"], "withheld")
    wrong = [f for f in transport_run["wrong-id"]["observation"]["wire"]["frames"] if f["kind"] == "response"]
    assert any(frame["id"] == 1002 for frame in wrong)


def test_duplicate_crlf_and_notifications(transport_run):
    duplicate = transport_run["duplicate-response"]["observation"]["wire"]["frames"]
    ids = [frame["id"] for frame in duplicate if frame["kind"] == "response"]
    assert ids.count(2) == 2
    crlf = transport_run["crlf-framing"]
    assert all(
        e["bytes"] == len(json.dumps(e["message"], separators=(",", ":"), ensure_ascii=False).encode()) + 2
        for e in events(crlf, "send")
        if e["message"].get("id") == 1
    )
    notifications = [
        f
        for f in transport_run["interleaved-notifications"]["observation"]["wire"]["frames"]
        if f["kind"] == "notification"
    ]
    assert len(notifications) == 3


def test_slow_writer_journals_its_writes(transport_run):
    [send] = [e for e in events(transport_run["slow-writer"], "send") if e.get("slow")]
    assert send["slow"]["sent_bytes"] == send["bytes"] > 32 * 1024 * 1024
    assert send["write_ms"] >= 0


def test_cancel_stops_the_producer(transport_run):
    record = transport_run["cancel-then-followup"]
    cancels = [e for e in record["journal"] if e.get("method") == "notifications/cancelled"]
    assert len(cancels) == 1 and cancels[0]["params"]["requestId"] == 2
    [observed] = events(record, "cancel-observed")
    # the cancel comes 1 s after the call; the producer's 8 s of ticks end early
    assert observed["producer_stopped"] is True and 800 <= observed["after_ms"] < 8000
    assert record["observation"]["calls"][0]["cancelled_after_ms"] is not None
    assert record["observation"]["followup"]["status"] == "returned"


@pytest.fixture(scope="module")
def modern_run(tmp_path_factory):
    """The protocol family under 2026-07-28, through the raw adapter (which speaks it by hand)."""
    from .conftest import Checkout

    checkout = Checkout(tmp_path_factory.mktemp("raw-modern") / "checkout", ["raw-jsonrpc"])
    options = ("--family", "protocol", "--protocol", "2026-07-28", "--transport", "stdio")
    checkout.harness("run", "--run-id", "m", *options)
    return {record["case"]: record for record in checkout.records("m")}


SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "mcp-client-matrix-reference", "version": "0.1.0"}}
OK_MODERN = {"resultType": "complete", "content": [text(ACCOUNT)], "structuredContent": ACCOUNT, "_meta": SERVER_INFO}


def _call_result(record: dict[str, Any]) -> Any:
    [call] = record["observation"]["calls"]
    assert call["status"] == "returned", call
    return call["result"]


def test_modern_results_carry_result_type_and_server_info_unless_the_case_says_otherwise(modern_run):
    assert _call_result(modern_run["resource-link"])["resultType"] == "complete"
    assert _call_result(modern_run["resource-link"])["_meta"] == SERVER_INFO
    assert _call_result(modern_run["resulttype-missing"]) == {k: v for k, v in OK_MODERN.items() if k != "resultType"}
    assert _call_result(modern_run["resulttype-unknown"]) == {**OK_MODERN, "resultType": "partial"}
    assert _call_result(modern_run["no-server-info"]) == {k: v for k, v in OK_MODERN.items() if k != "_meta"}
    asked = _call_result(modern_run["input-required-unanswerable"])
    assert asked["resultType"] == "input_required" and asked["requestState"] == "ledger-read-ACC-4471-step-1"
    assert asked["inputRequests"]["confirm_read"]["method"] == "elicitation/create"
    assert "content" not in asked


def test_a_server_of_a_newer_revision_refuses_every_request_naming_it(modern_run):
    record = modern_run["unsupported-version"]
    assert record["observation"]["initialize"]["status"] == "raised"
    [discover] = [e for e in record["journal"] if e["event"] == "recv"]
    assert (discover["method"], discover["protocol"]) == ("server/discover", "2026-07-28")
    [answer] = [e["message"] for e in record["journal"] if e["event"] == "send"]
    assert answer["error"]["code"] == -32022
    assert answer["error"]["data"] == {"supported": ["2027-03-15"], "requested": "2026-07-28"}


def test_every_request_of_a_modern_cell_is_journaled_under_2026_07_28(modern_run):
    for case_id, record in modern_run.items():
        [start] = [e for e in record["journal"] if e["event"] == "start"]
        assert start["protocol"] == "2026-07-28", case_id
        revisions = {
            e.get("protocol") for e in record["journal"] if e["event"] == "recv" and e.get("kind") == "request"
        }
        assert revisions == {"2026-07-28"}, case_id
