"""End to end with the real clients: every SDK adapter, real servers, the real harness CLI.

These tests assert what must hold for any honest observation (the control case passes with the
result unaltered, the follow-up works, the variant's options reach the wire, the installed
version is the pinned one, nothing is left running), never what a given client "should" do with a
fault: that is what the matrix observes.
"""

from __future__ import annotations

import json
import re
import tomllib
from xml.etree import ElementTree

import pytest

from harness.classify.outcomes import OUTCOMES
from harness.matrix import catalog, manifest
from harness.matrix.cells import TOOL_CALL

from .conftest import REPO

SDK_ADAPTERS = ("python-mcp", "python-mcp-v1", "ts-sdk", "ts-client-v2")


def _adapter(name: str) -> manifest.Adapter:
    return manifest.load(REPO / "clients" / name / "adapter.toml")


def pinned_version(name: str) -> str:
    """The version of the adapter's package its dependency files pin (read here independently of the
    harness, which reads the installed one)."""
    adapter = _adapter(name)
    directory = REPO / "clients" / name
    if adapter.runtime == "python":
        text = (directory / "requirements.txt").read_text()
        return re.search(rf"^{re.escape(adapter.package)}==(\S+)$", text, re.MULTILINE).group(1)
    if adapter.runtime == "go":
        text = (directory / "go.mod").read_text()
        return re.search(rf"^\s*(?:require\s+)?{re.escape(adapter.package)} v(\S+)", text, re.MULTILINE).group(1)
    if adapter.runtime == "rust":
        dependency = tomllib.loads((directory / "Cargo.toml").read_text())["dependencies"][adapter.package]
        return str(dependency["version"] if isinstance(dependency, dict) else dependency).lstrip("=")
    if adapter.runtime == "java":
        group, _, artifact = adapter.package.partition(":")
        pom = ElementTree.parse(directory / "pom.xml").getroot()
        ns = {"m": pom.tag.partition("}")[0].lstrip("{")}
        for dependency in pom.iterfind(".//m:dependencies/m:dependency", ns):
            if dependency.findtext("m:groupId", namespaces=ns) == group and (
                dependency.findtext("m:artifactId", namespaces=ns) == artifact
            ):
                return dependency.findtext("m:version", namespaces=ns)
        raise AssertionError(f"{name}: pom.xml has no dependency {adapter.package}")
    return json.loads((REPO / "clients" / name / "package.json").read_text())["dependencies"][adapter.package]


@pytest.fixture(scope="module")
def schema_slice(tmp_path_factory):
    from .conftest import Checkout

    scratch = Checkout(tmp_path_factory.mktemp("e2e") / "checkout", ["raw-jsonrpc", *SDK_ADAPTERS])
    scratch.harness(
        "run",
        "--run-id",
        "e2e",
        "--case",
        "ok",
        "--case",
        "type-swap",
        "--case",
        "missing-content",
        "--protocol",
        "2025-11-25",
        timeout=900,
    )
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


def test_call_only_variants_call_before_any_listing(schema_slice):
    """``list_tools = false`` reaches the wire: no ``tools/list`` arrives before the case's call.

    A listing after the call is the SDK's own choice (mcp validates a result against a schema it
    fetches then), observed and not asserted.
    """
    scratch, _ = schema_slice
    checked = 0
    for record in scratch.records("e2e"):
        if record["column"].endswith("/call-only"):
            received = [
                (e.get("method"), (e.get("params") or {}).get("name"))
                for e in record["journal"]
                if e["event"] == "recv"
            ]
            before_call = received[: received.index(("tools/call", TOOL_CALL["name"]))]
            assert "tools/list" not in [method for method, _ in before_call], record["key"]
            checked += 1
    assert checked == len(SDK_ADAPTERS) * 3 * 2 * 3, "every call-only cell: 3 cases x 2 modes x 3 transports"


def test_recorded_versions_are_the_pinned_ones(schema_slice):
    _, rows = schema_slice
    for name in SDK_ADAPTERS:
        versions = {row["package_version"] for row in rows.values() if row["adapter"] == name}
        assert versions == {pinned_version(name)}, name


def _listed_tools(journal: list[dict]) -> list[dict]:
    """The tools of every ``tools/list`` answer the server sent, from its journal."""
    asked = {e["id"] for e in journal if e["event"] == "recv" and e.get("method") == "tools/list"}
    return [
        tool
        for e in journal
        if e["event"] == "send" and e.get("id") in asked
        for tool in ((e.get("message") or {}).get("result") or {}).get("tools", [])
    ]


def test_schema_modes_reach_the_wire(schema_slice):
    """A list-first client is sent the faulty tool's outputSchema in mode advertised, and no outputSchema in hidden."""
    scratch, _ = schema_slice
    checked = 0
    for record in scratch.records("e2e"):
        if record["column"].endswith("/list-first"):
            tools = {tool["name"]: tool for tool in _listed_tools(record["journal"])}
            assert TOOL_CALL["name"] in tools, record["key"]
            if record["schema"] == "advertised":
                assert tools[TOOL_CALL["name"]].get("outputSchema", {}).get("type") == "object", record["key"]
            else:
                assert record["schema"] == "hidden"
                assert not any("outputSchema" in tool for tool in tools.values()), record["key"]
            checked += 1
    assert checked == len(SDK_ADAPTERS) * 3 * 2 * 3, "every list-first cell: 3 cases x 2 modes x 3 transports"


@pytest.fixture(scope="module")
def modern_slice(tmp_path_factory):
    """The control case and one schema case under 2026-07-28, on every transport."""
    from .conftest import Checkout

    scratch = Checkout(tmp_path_factory.mktemp("modern") / "checkout", ["raw-jsonrpc", *SDK_ADAPTERS])
    scratch.harness("run", "--run-id", "m", "--protocol", "2026-07-28", "--case", "ok", "--case", "type-swap")
    return scratch


def test_columns_that_declare_2026_07_28_speak_it_and_the_others_show_what_they_did(modern_slice):
    scratch = modern_slice
    declares = {name for name in ("raw-jsonrpc", *SDK_ADAPTERS) if "2026-07-28" in _adapter(name).protocols}
    assert declares == {"raw-jsonrpc", "python-mcp", "ts-client-v2"}
    for transport in ("stdio", "http-json", "http-sse"):
        rows = scratch.rows("m", transport, protocol="2026-07-28")
        assert rows and {row["outcome"] for row in rows.values()} <= set(OUTCOMES) - {"harness-error", "crash"}
        for (client, case, schema), row in rows.items():
            where = (transport, client, case, schema, row["error_message"])
            if row["adapter"] in declares:
                assert row["wire_protocol"] == "2026-07-28", where
                if case == "ok":
                    assert row["outcome"] == "pass" and str(row["altered"]) == "False", where
                    assert row["followup"] == "ok", where
            else:  # a handshake-era client against a server that speaks 2026-07-28 only
                assert case in catalog.ERA_CASES, where
                assert row["wire_protocol"] in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"), where
                assert row["outcome"] != "pass", where
    assert scratch.processes_left() == []


def test_the_report_names_the_spoken_revision_and_the_cells_not_asked(modern_slice):
    scratch = modern_slice
    scratch.cli("report", "--run", "m")
    reports = scratch.root / "reports"
    index = (reports / "index.html").read_text()
    assert "spoke 2025-11-25" in index, "a handshake-era column's era cell says what it spoke"
    assert "not asked" in index, "a handshake-era column's type-swap rows under 2026-07-28"
    page = (reports / "cells" / "python-mcp--call-only--ok--advertised--http-json--2026-07-28.html").read_text()
    assert "the client's requests carried 2026-07-28" in page
    journal = [e for e in scratch.records("m") if e["key"].startswith("python-mcp--call-only--ok--advertised--stdio")]
    assert {e.get("protocol") for e in journal[0]["journal"] if e["event"] == "recv"} == {"2026-07-28"}


@pytest.mark.slow
def test_size_family_with_every_column(checkout):
    scratch = checkout("raw-jsonrpc", *SDK_ADAPTERS)
    scratch.harness("run", "--run-id", "size", "--family", "size", "--protocol", "2025-11-25", timeout=1800)
    rows = scratch.rows("size")
    assert len(rows) == 11 * 9
    assert len(scratch.rows("size", "http-sse")) == 9 * 9
    assert {row["outcome"] for row in rows.values()} <= set(OUTCOMES) - {"harness-error"}
    assert all(int(row["frame_bytes"]) > 3_000_000 for row in rows.values()), "the journal has every big frame"
    assert all(row["outcome"] == "pass" for (client, _, _), row in rows.items() if client == "raw-jsonrpc")
    assert scratch.processes_left() == []
