"""The static report: escaped, self-contained, linked relatively, with data files."""

from __future__ import annotations

import re

import pandas as pd

REQUIRED_COLUMNS = {
    "client", "adapter", "variant", "case", "family", "schema", "transport", "outcome", "followup",
    "altered", "error_type", "error_code", "error_message", "transport_errors", "package",
    "package_version", "duration_ms",
}


def test_report_escapes_client_text_and_links_relatively(checkout):
    scratch = checkout("raw-jsonrpc", "garbage")
    scratch.harness("run", "--run-id", "rep", "--case", "ok", "--case", "text-10mib", "--budget-scale", "0.5",
                    "--transport", "stdio")
    scratch.harness("report", "--run", "rep")
    reports = scratch.root / "reports"
    index = (reports / "index.html").read_text()
    assert "<script>alert(" not in index
    assert "&lt;script&gt;alert(&#39;observation&#39;)" in index
    pages = list((reports / "cells").glob("*.html"))
    assert len(pages) == 2 * 3
    for page in pages:
        text = page.read_text()
        assert "<script>alert(" not in text
    garbage_page = next(p for p in pages if p.name.startswith("garbage--default--ok--advertised"))
    assert "&lt;script&gt;alert(&#39;stdout&#39;)" in garbage_page.read_text()
    for href in re.findall(r'(?:href|src)="([^"]+)"', index):
        assert not href.startswith(("/", "http:", "https:", "file:")), href
        assert (reports / href).exists(), href
    assert not list(scratch.root.glob(".reports.staging*")), "no staging left behind"


def test_data_files_have_the_documented_columns(checkout):
    scratch = checkout("raw-jsonrpc")
    scratch.harness("run", "--run-id", "data", "--case", "type-swap", "--transport", "stdio")
    scratch.harness("report", "--run", "data")
    frame = pd.read_csv(scratch.root / "reports" / "data" / "cells.csv")
    assert REQUIRED_COLUMNS <= set(frame.columns)
    assert set(frame["schema"]) == {"advertised", "hidden"}
    assert set(frame["package_version"].isna()) == {True}, "the raw adapter has no package"
    assert (frame["transport"] == "stdio").all()
    json_frame = pd.read_json(scratch.root / "reports" / "data" / "cells.json")
    assert len(json_frame) == len(frame)
