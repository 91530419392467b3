"""The outcome rules, on records shaped like the runner's (facts in, outcome out)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.classify.outcomes import cells_frame, is_client_timeout

SENT_OK = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"a": 1}}
FOLLOWUP_OK = {
    "tool": "echo",
    "status": "returned",
    "duration_ms": 1.0,
    "error": None,
    "result": {"content": [{"type": "text", "text": "follow-up"}]},
}
FOLLOWUP_FAILED = {
    "tool": "echo",
    "status": "raised",
    "duration_ms": 1.0,
    "result": None,
    "error": {"type": "McpError", "code": -32000, "message": "Connection closed"},
}


def record(
    call: dict[str, Any] | None,
    followup: dict[str, Any] | None = FOLLOWUP_OK,
    *,
    process: dict[str, Any] | None = None,
    init_ok: bool = True,
    harness_error: str | None = None,
    observation: bool = True,
) -> dict[str, Any]:
    journal = [
        {"event": "recv", "method": "tools/call", "id": 2, "params": {"name": "get_account_balance"}},
        {"event": "send", "id": 2, "bytes": 120, "message": {"id": 2, "result": SENT_OK}},
    ]
    obs = {
        "contract": 1,
        "package_version": "1",
        "runtime_version": "x",
        "initialize": {
            "status": "ok" if init_ok else "raised",
            "duration_ms": 1.0,
            "error": None if init_ok else {"type": "McpError", "code": None, "message": "bad"},
        },
        "list_tools": None,
        "calls": [call] if call else [],
        "followup": followup,
        "transport_errors": [],
        "close": None,
    }
    return {
        "key": "k",
        "column": "c",
        "adapter": "a",
        "variant": "v",
        "case": "ok",
        "family": "schema",
        "schema": "advertised",
        "transport": "stdio",
        "budget_ms": 30000,
        "harness_error": harness_error,
        "process": process or {"exit_code": 0, "timed_out": False, "wall_ms": 10.0},
        "observation": obs if observation else None,
        "journal": journal,
    }


def returned(result: dict[str, Any]) -> dict[str, Any]:
    return {"tool": "get_account_balance", "status": "returned", "result": result, "error": None, "duration_ms": 1.0}


def raised(code: int | None, message: str, kind: str = "McpError") -> dict[str, Any]:
    return {
        "tool": "get_account_balance",
        "status": "raised",
        "result": None,
        "duration_ms": 1.0,
        "error": {"type": kind, "code": code, "message": message},
    }


def outcome(rec: dict[str, Any]) -> dict[str, Any]:
    return cells_frame([rec], {"adapters": {}}).iloc[0].to_dict()


def test_pass_unaltered_with_serializer_noise():
    row = outcome(
        record(
            returned(
                {
                    **SENT_OK,
                    "isError": False,
                    "_meta": None,
                    "content": [{"type": "text", "text": "{}", "annotations": None}],
                }
            )
        )
    )
    assert row["outcome"] == "pass" and row["altered"] is False and row["followup"] == "ok"


def test_pass_altered_when_structured_content_is_dropped():
    row = outcome(record(returned({"content": SENT_OK["content"]})))
    assert row["outcome"] == "pass" and row["altered"] is True and row["altered_fields"] == "structuredContent"


def test_error_result():
    assert outcome(record(returned({**SENT_OK, "isError": True})))["outcome"] == "error-result"


def test_reject_needs_a_working_followup():
    assert outcome(record(raised(-32602, "Structured content does not match")))["outcome"] == "reject"
    row = outcome(record(raised(-32000, "Connection closed"), FOLLOWUP_FAILED))
    assert row["outcome"] == "disconnect" and row["stage"] == "call" and row["error_code"] == -32000


def test_returned_then_dead_session_is_a_disconnect():
    row = outcome(record(returned(SENT_OK), FOLLOWUP_FAILED))
    assert row["outcome"] == "disconnect" and row["stage"] == "followup"


def test_client_timeout_versus_harness_timeout():
    row = outcome(record(raised(-32001, "Request timed out")))
    assert row["outcome"] == "timeout" and row["timeout_by"] == "client"
    row = outcome(record(None, None, process={"exit_code": None, "timed_out": True, "wall_ms": 1.0}, observation=False))
    assert row["outcome"] == "timeout" and row["timeout_by"] == "harness" and row["error_type"] == "HarnessTimeout"


def test_adapter_deadline_counts_as_the_harness_budget():
    row = outcome(record(raised(None, "adapter deadline: call ended", kind="AdapterTimeout")))
    assert row["outcome"] == "timeout" and row["timeout_by"] == "harness"


def test_crash_initialize_and_harness_error():
    assert (
        outcome(record(None, None, process={"exit_code": 1, "timed_out": False, "wall_ms": 1.0}, observation=False))[
            "outcome"
        ]
        == "crash"
    )
    assert outcome(record(None, None, init_ok=False))["outcome"] == "disconnect"
    assert outcome(record(None, None, harness_error="boom", observation=False))["outcome"] == "harness-error"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"type": "McpError", "code": -32001, "message": "Request timed out"}, True),
        ({"type": "McpError", "code": 408, "message": "Timed out while waiting for response"}, True),
        ({"type": "McpError", "code": -32602, "message": "Invalid params"}, False),
        # Go: a request bounded by its context (the Go SDKs' own request timeout), and a cancelled one
        ({"type": "context.deadlineExceededError", "code": None, "message": "context deadline exceeded"}, True),
        ({"type": "*errors.errorString", "code": None, "message": "context canceled"}, False),
        # Rust: a request bounded by tokio::time::timeout (rmcp's call_tool takes no timeout option)
        ({"type": "Elapsed", "code": None, "message": "deadline has elapsed"}, True),
        (None, False),
    ],
)
def test_client_timeout_signature(error, expected):
    assert is_client_timeout(error) is expected
