"""The static report: escaped, self-contained, linked relatively, with data files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.report import formatting, pages
from harness.run.store import RunStore

REQUIRED_COLUMNS = {
    "client",
    "adapter",
    "variant",
    "case",
    "family",
    "schema",
    "transport",
    "outcome",
    "followup",
    "altered",
    "error_type",
    "error_code",
    "error_message",
    "transport_errors",
    "package",
    "package_version",
    "duration_ms",
}
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Control characters that must never reach a page raw (tab, newline and carriage return may)."""
SENT = {"content": [{"type": "text", "text": '{"balance": 1}'}], "structuredContent": {"balance": 1}}
FOLLOWUP = {
    "tool": "echo",
    "status": "returned",
    "duration_ms": 1.0,
    "error": None,
    "result": {"content": [{"type": "text", "text": "follow-up"}]},
    "model_view": {"value": "follow-up", "error_flag": None, "error_flag_field": None, "message": None},
}


def test_report_escapes_client_text_and_links_relatively(checkout):
    scratch = checkout("raw-jsonrpc", "garbage")
    scratch.harness(
        "run",
        "--run-id",
        "rep",
        "--case",
        "ok",
        "--case",
        "text-10mib",
        "--budget-scale",
        "0.5",
        "--transport",
        "stdio",
        "--protocol",
        "2025-11-25",
    )
    scratch.cli("report", "--run", "rep")
    reports = scratch.root / "reports"
    index = (reports / "index.html").read_text()
    assert "<script>alert(" not in index
    assert "&lt;script&gt;alert(&#39;observation&#39;)" in index
    written = list((reports / "cells").glob("*.html"))
    assert len(written) == 2 * 3
    for page in written:
        text = page.read_text()
        assert "<script>alert(" not in text
    garbage_page = next(p for p in written if p.name.startswith("garbage--default--ok--advertised"))
    assert "&lt;script&gt;alert(&#39;stdout&#39;)" in garbage_page.read_text()
    for href in re.findall(r'(?:href|src)="([^"]+)"', index):
        assert not href.startswith(("/", "http:", "https:", "file:")), href
        assert (reports / href).exists(), href
    assert not list(scratch.root.glob(".reports.staging*")), "no staging left behind"


def test_data_files_have_the_documented_columns(checkout):
    scratch = checkout("raw-jsonrpc")
    scratch.harness("run", "--run-id", "data", "--case", "type-swap", "--transport", "stdio")
    scratch.cli("report", "--run", "data")
    frame = pd.read_csv(scratch.root / "reports" / "data" / "cells.csv")
    assert set(frame.columns) >= REQUIRED_COLUMNS
    assert set(frame["schema"]) == {"advertised", "hidden"}
    assert set(frame["package_version"].isna()) == {True}, "the raw adapter has no package"
    assert (frame["transport"] == "stdio").all()
    json_frame = pd.read_json(scratch.root / "reports" / "data" / "cells.json")
    assert len(json_frame) == len(frame)


def test_control_characters_from_a_client_are_shown_as_markers(checkout):
    scratch = checkout("garbage")
    scratch.harness("run", "--run-id", "ctl", "--case", "ok", "--transport", "stdio", "--protocol", "2025-11-25")
    scratch.cli("report", "--run", "ctl")
    written = list((scratch.root / "reports").rglob("*.html"))
    assert len(written) == 1 + 1 + 2, "index, model view, one evidence page per schema mode"
    for page in written:
        text = page.read_text(encoding="utf-8")
        assert not RAW_CONTROL.search(text), (page.name, RAW_CONTROL.search(text))
        assert "<script>alert(" not in text
    evidence = next(p for p in written if p.name.startswith("garbage--default--ok--advertised"))
    assert "\\u0000\u00ff garbage &lt;script&gt;alert(&#39;stdout&#39;)&lt;/script&gt;" in evidence.read_text()


def _framework_run(root: Path) -> RunStore:
    """A run built by hand: one SDK column and one framework column whose no-structured cell was rejected."""
    run = RunStore(root / "results" / "fw")
    run.create()
    run.write_meta(
        {
            "run_id": "fw",
            "started": "2026-01-01T00:00:00Z",
            "finished": "2026-01-01T00:01:00Z",
            "harness_commit": "0" * 40,
            "backend": "local",
            "os": "Linux",
            "python": "3.12",
            "node": None,
            "adapters": {
                "sdk": {
                    "title": "An SDK",
                    "kind": "sdk",
                    "package": "sdk",
                    "package_version": "1.0",
                    "variants": {"default": {"column": "sdk", "description": "", "options": {}}},
                },
                "fw": {
                    "title": "A framework",
                    "kind": "framework",
                    "package": "fw",
                    "package_version": "2.0",
                    "variants": {"default": {"column": "fw", "description": "", "options": {}}},
                },
            },
        }
    )
    journal = [
        {"event": "recv", "t": 0.1, "method": "tools/call", "id": 2, "params": {"name": "get_account_balance"}},
        {
            "event": "send",
            "t": 0.2,
            "id": 2,
            "bytes": 120,
            "sha256": "0" * 64,
            "write_ms": 0.1,
            "message": {"jsonrpc": "2.0", "id": 2, "result": SENT},
        },
    ]

    def record(column: str, case: str, call: dict[str, Any]) -> None:
        observation = {
            "contract": 1,
            "package_version": None,
            "initialize": {"status": "ok", "duration_ms": 1.0},
            "calls": [call],
            "followup": FOLLOWUP,
            "transport_errors": [],
        }
        run.append(
            {
                "key": f"{column}--default--{case}--advertised--stdio",
                "column": column,
                "adapter": column,
                "kind": "framework" if column == "fw" else "sdk",
                "variant": "default",
                "case": case,
                "family": "schema",
                "schema": "advertised",
                "transport": "stdio",
                "budget_ms": 30000,
                "harness_error": None,
                "observation": observation,
                "journal": journal,
                "process": {
                    "exit_code": 0,
                    "timed_out": False,
                    "wall_ms": 12.5,
                    "stragglers_killed": 0,
                    "stdout_bytes": 0,
                    "stderr_bytes": 0,
                },
                "finished_at": "2026-01-01T00:00:30Z",
            }
        )

    returned = {"tool": "get_account_balance", "status": "returned", "duration_ms": 1.0, "error": None, "result": SENT}
    rejected = {
        "tool": "get_account_balance",
        "status": "raised",
        "duration_ms": 1.0,
        "result": None,
        "error": {"type": "ToolError", "code": None, "message": "output does not match the schema"},
    }
    record("sdk", "ok", returned)
    record("sdk", "no-structured", rejected)
    record(
        "fw",
        "ok",
        {
            **returned,
            "model_view": {
                "value": SENT["content"][0]["text"],
                "error_flag": None,
                "error_flag_field": None,
                "message": None,
            },
        },
    )
    record("fw", "no-structured", rejected)
    (run.directory / "boundary.json").write_text(
        json.dumps(
            [
                {
                    "column": "sdk",
                    "adapter": "sdk",
                    "variant": "default",
                    "kind": "text",
                    "largest_accepted": 1048576,
                    "smallest_rejected": 1048577,
                    "no_limit_up_to": None,
                    "probes": 1,
                    "rejection": "frame too large",
                    "same_for": ["sdk/<b>listing</b>"],
                }
            ]
        )
    )
    return run


def _no_nan(constant: str) -> None:
    raise AssertionError(f"cells.json holds {constant}")


def test_missing_values_are_explicit_never_nan(tmp_path):
    out = tmp_path / "reports"
    assert pages.render(_framework_run(tmp_path), out) == 4
    written = list(out.rglob("*.html"))
    for page in written:
        assert not re.search(r"\bnan\b", page.read_text(encoding="utf-8"), re.IGNORECASE), page.name
    model = (out / "model-view.html").read_text(encoding="utf-8")
    assert "—&nbsp;rejected</span>" in model
    assert "1 column, 2 cells." in model
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "2 fault rows, 1 client column,\n2 cells." in index
    assert '<td class="num" title="frame too large">1,048,576<br><small>1 probe</small></td>' in index
    assert "<small>and sdk/&lt;b&gt;listing&lt;/b&gt; (same frame options, not searched again)</small>" in index
    cells = json.loads((out / "data" / "cells.json").read_text(encoding="utf-8"), parse_constant=_no_nan)
    rejected = next(c for c in cells if c["client"] == "fw" and c["case"] == "no-structured")
    assert rejected["outcome"] == "reject"
    assert rejected["model_channel"] is None and rejected["model_excerpt"] is None
    assert not [(c["key"], k) for c in cells for k, v in c.items() if isinstance(v, str) and v.lower() == "nan"]


@pytest.mark.parametrize(
    ("result", "text", "note", "probes"),
    [
        (None, "—", "", ""),
        (
            {
                "largest_accepted": 1048576,
                "smallest_rejected": 1048577,
                "no_limit_up_to": None,
                "probes": 1,
                "rejection": "too big",
            },
            "1,048,576",
            "",
            "1 probe",
        ),
        (
            {"largest_accepted": None, "smallest_rejected": 100, "no_limit_up_to": None, "probes": 2, "rejection": "x"},
            "rejects every frame ≥ 100",
            "",
            "2 probes",
        ),
        (
            {
                "largest_accepted": 5000,
                "smallest_rejected": None,
                "no_limit_up_to": None,
                "probes": 9,
                "rejection": None,
                "inconclusive_at": 9000,
            },
            "inconclusive: timed out at 9,000",
            "(accepted 5,000)",
            "9 probes",
        ),
    ],
)
def test_boundary_cells(result, text, note, probes):
    cell = formatting.boundary_cell(result)
    assert (cell["text"], cell["note"], cell["probes"]) == (text, note, probes)


def test_a_host_cells_model_journal_is_summarized_for_its_page(tmp_path):
    journal = tmp_path / "model.jsonl"
    turn = {
        "t": 1.5,
        "event": "turn",
        "number": 2,
        "dialect": "openai-chat",
        "path": "/v1/chat/completions",
        "body": {"messages": ["x" * 100_000]},
        "offered": ["ref_get_account_balance"],
        "action": {"answer": "Done.", "reason": "the script is done"},
        "results": [
            {"call_id": "call_1", "tool": "ref_get_account_balance", "content": "<b>" * 1000, "is_error": None}
        ],
    }
    lines = [{"t": 0.1, "event": "connection", "peer": "127.0.0.1:5000"}, turn]
    journal.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    connection, shown, unparsed = formatting.model_journal(journal)
    assert connection == {"t": 0.1, "event": "connection", "detail": {"peer": "127.0.0.1:5000"}}
    assert "body" not in shown["detail"] and shown["detail"]["model"] == turn["action"]
    [result] = shown["detail"]["results"]
    assert result["content"].endswith("… (3,000 characters)") and len(result["content"]) < 2100
    assert unparsed["event"] == "unparsed"
    assert formatting.model_journal(tmp_path / "absent.jsonl") == []
