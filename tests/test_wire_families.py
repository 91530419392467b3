"""The transport and protocol families against real SDKs: the fault reaches the wire, the harness stays honest.

Two real columns (the Python and the TypeScript SDK) on a few wire faults and protocol faults, on
stdio. The assertions hold for any honest observation: every cell is classified (never a
harness-error), the server's journal shows that the fault was actually sent, and nothing is left
running. What a client does with a fault is never asserted: that is what the matrix observes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.classify.outcomes import OUTCOMES
from harness.matrix.cells import TOOL_CALL

from .conftest import Checkout

COLUMNS = ("python-mcp/call-only", "ts-sdk/call-only")
Journal = list[dict[str, Any]]


def _received(journal: Journal, method: str) -> list[dict[str, Any]]:
    """The requests of ``method`` the server received (for ``tools/call``: of the case's tool only)."""
    return [
        e
        for e in journal
        if e["event"] == "recv"
        and e.get("method") == method
        and (method != "tools/call" or (e.get("params") or {}).get("name") == TOOL_CALL["name"])
    ]


def _case_call_id(journal: Journal) -> Any:
    """The id of the case's ``tools/call`` as the server received it."""
    return _received(journal, "tools/call")[0]["id"]


def _sent(journal: Journal, msg_id: Any) -> list[dict[str, Any]]:
    """The messages the server sent with id ``msg_id``."""
    return [e["message"] for e in journal if e["event"] == "send" and e.get("id") == msg_id]


def _stdout_noise(journal: Journal) -> bool:
    return any(e["event"] == "send-raw" and e["stream"] == "stdout" and "DEBUG" in e["excerpt"] for e in journal)


def _wrong_id(journal: Journal) -> bool:
    call = _case_call_id(journal)
    return _sent(journal, call) == [] and len(_sent(journal, call + 1000)) == 1


def _duplicate_response(journal: Journal) -> bool:
    sends = [e for e in journal if e["event"] == "send" and e.get("id") == _case_call_id(journal)]
    return len(sends) == 2 and sends[0]["sha256"] == sends[1]["sha256"]


def _version_mismatch(journal: Journal) -> bool:
    [answer] = _sent(journal, _received(journal, "initialize")[0]["id"])
    return answer["result"]["protocolVersion"] == "1999-01-01"


def _jsonrpc_error(journal: Journal) -> bool:
    [answer] = _sent(journal, _case_call_id(journal))
    return "result" not in answer and answer["error"]["code"] == -32603


def _unknown_content_type(journal: Journal) -> bool:
    [answer] = _sent(journal, _case_call_id(journal))
    return "hologram" in [block.get("type") for block in answer["result"]["content"]]


FAULT_SENT: dict[str, Callable[[Journal], bool]] = {
    "stdout-noise": _stdout_noise,
    "wrong-id": _wrong_id,
    "duplicate-response": _duplicate_response,
    "version-mismatch": _version_mismatch,
    "jsonrpc-error": _jsonrpc_error,
    "unknown-content-type": _unknown_content_type,
}
"""Per case: does the server's journal show that its fault went out?"""


@pytest.fixture(scope="module")
def wire_run(tmp_path_factory):
    scratch = Checkout(tmp_path_factory.mktemp("wire") / "checkout", ["python-mcp", "ts-sdk"])
    cases = [arg for case in FAULT_SENT for arg in ("--case", case)]
    columns = [arg for column in COLUMNS for arg in ("--adapter", column)]
    options = ["--run-id", "wire", "--transport", "stdio", "--protocol", "2025-11-25", "--budget-scale", "0.5"]
    options += ["--jobs", "2"]
    scratch.harness("run", *options, *columns, *cases, timeout=600)
    return scratch


def test_every_wire_fault_cell_is_classified(wire_run):
    rows = wire_run.rows("wire")
    assert set(rows) == {(column, case, "none") for column in COLUMNS for case in FAULT_SENT}
    for key, row in rows.items():
        assert row["outcome"] in set(OUTCOMES) - {"harness-error"}, (key, row["error_message"])


def test_the_server_journal_shows_each_fault_was_sent(wire_run):
    """Wherever the request that the fault answers reached the server, the journal has the fault.

    A cell whose adapter ran out of time before sending that request (a loaded machine) must be a
    timeout; every fault must still have been sent to at least one of the columns.
    """
    rows = wire_run.rows("wire")
    records = wire_run.records("wire")
    assert len(records) == len(COLUMNS) * len(FAULT_SENT)
    sent_to: dict[str, list[str]] = {case: [] for case in FAULT_SENT}
    for record in records:
        journal = record["journal"]
        assert journal[0]["event"] == "start", record["key"]
        answered = "initialize" if record["case"] == "version-mismatch" else "tools/call"
        if not _received(journal, answered):
            assert rows[(record["column"], record["case"], "none")]["outcome"] == "timeout", record["key"]
            continue
        assert FAULT_SENT[record["case"]](journal), record["key"]
        sent_to[record["case"]].append(record["column"])
    assert all(sent_to.values()), sent_to


def test_nothing_is_left_running_after_wire_faults(wire_run):
    assert wire_run.processes_left() == []
