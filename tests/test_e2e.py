"""End to end with the real clients: every SDK adapter, real servers, the real harness CLI.

These tests assert what must hold for any honest observation (the control case passes with the
result unaltered, the follow-up works, the variant's options reach the wire, the installed
version is the pinned one, nothing is left running), never what a given client "should" do with a
fault: that is what the matrix observes.
"""

from __future__ import annotations

import json
import re

import pytest

from harness import manifest
from harness.classify import OUTCOMES

from .conftest import REPO

SDK_ADAPTERS = ("python-mcp", "python-mcp-v1", "ts-sdk", "ts-client-v2")


def pinned_version(name: str) -> str:
    adapter = manifest.load(REPO / "clients" / name / "adapter.toml")
    if adapter.runtime == "python":
        text = (REPO / "clients" / name / "requirements.txt").read_text()
        return re.search(rf"^{re.escape(adapter.package)}==(\S+)$", text, re.MULTILINE).group(1)
    return json.loads((REPO / "clients" / name / "package.json").read_text())["dependencies"][adapter.package]


@pytest.fixture(scope="module")
def schema_slice(tmp_path_factory):
    from .conftest import Checkout

    scratch = Checkout(tmp_path_factory.mktemp("e2e") / "checkout", ["raw-jsonrpc", *SDK_ADAPTERS])
    scratch.harness("run", "--run-id", "e2e", "--case", "ok", "--case", "type-swap", "--case", "missing-content",
                    timeout=900)
    return scratch, scratch.rows("e2e")


def test_every_cell_is_classified(schema_slice):
    scratch, rows = schema_slice
    assert len({row["client"] for row in rows.values()}) == 11
    assert len(rows) == 11 * 3 * 2
    for transport in ("http-json", "http-sse"):  # the stdio-only maxbuf variants are not on HTTP
        assert len(scratch.rows("e2e", transport)) == 9 * 3 * 2
    assert {row["outcome"] for row in rows.values()} <= set(OUTCOMES) - {"harness-error", "crash"}
    assert scratch.processes_left() == []


def test_control_case_passes_over_http(schema_slice):
    scratch, _ = schema_slice
    for transport in ("http-json", "http-sse"):
        for (client, case, schema), row in scratch.rows("e2e", transport).items():
            if case == "ok":
                assert row["outcome"] == "pass" and row["followup"] == "ok", (transport, client, schema)


def test_control_case_passes_unaltered_everywhere(schema_slice):
    _, rows = schema_slice
    for (client, case, schema), row in rows.items():
        if case == "ok":
            assert row["outcome"] == "pass", (client, schema, row["error_message"])
            assert str(row["altered"]) == "False", (client, schema, row["altered_fields"])
            assert row["followup"] == "ok"


def test_list_first_variants_list_tools_on_the_wire(schema_slice):
    _, rows = schema_slice
    for (client, _case, _schema), row in rows.items():
        if client.endswith("/list-first"):
            assert str(row["tools_list_called"]) == "True", client


def test_recorded_versions_are_the_pinned_ones(schema_slice):
    _, rows = schema_slice
    for name in SDK_ADAPTERS:
        versions = {row["package_version"] for row in rows.values() if row["adapter"] == name}
        assert versions == {pinned_version(name)}, name


def test_schema_modes_reach_the_client(schema_slice):
    """The same fault, advertised or hidden, is observed separately for every column."""
    _, rows = schema_slice
    for (client, case, schema) in rows:
        assert (client, case, "hidden" if schema == "advertised" else "advertised") in rows


@pytest.mark.slow
def test_size_family_with_every_column(checkout):
    scratch = checkout("raw-jsonrpc", *SDK_ADAPTERS)
    scratch.harness("run", "--run-id", "size", "--family", "size", timeout=1800)
    rows = scratch.rows("size")
    assert len(rows) == 11 * 9
    assert len(scratch.rows("size", "http-sse")) == 9 * 9
    assert {row["outcome"] for row in rows.values()} <= set(OUTCOMES) - {"harness-error"}
    assert all(int(row["frame_bytes"]) > 3_000_000 for row in rows.values()), "the journal has every big frame"
    assert all(row["outcome"] == "pass" for (client, _, _), row in rows.items() if client == "raw-jsonrpc")
    assert scratch.processes_left() == []
