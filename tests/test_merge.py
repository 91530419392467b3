"""``python -m harness merge``: the shard runs of one matrix are the run one job would have made.

Four real shard runs of a selection, merged, equal the unsharded run cell for cell (``diff
--require-same-cells``), render the same report, and keep their evidence; runs that cannot be parts
of one matrix are refused in one line, with nothing written.
"""

from __future__ import annotations

import json

import pytest

from .conftest import Checkout

SELECTION = ["--adapter", "raw-jsonrpc", "--case", "ok", "--case", "type-swap", "--case", "missing-content",
             "--transport", "stdio", "--jobs", "2"]  # fmt: skip
SHARDS = 4
pytestmark = pytest.mark.slow  # five real runs; CI runs the slow tests


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """A scratch checkout with an unsharded run ``whole`` and its four shards ``s1``..``s4``."""
    scratch = Checkout(tmp_path_factory.mktemp("merge") / "checkout", ["raw-jsonrpc"])
    scratch.harness("run", *SELECTION, "--run-id", "whole")
    for index in range(1, SHARDS + 1):
        scratch.harness("run", *SELECTION, "--shard", f"{index}/{SHARDS}", "--run-id", f"s{index}", "--fresh")
    return scratch


def test_merged_shards_equal_the_unsharded_run_cell_for_cell(shards):
    done = shards.harness("merge", "s1", "s2", "s3", "s4", "--run-id", "merged")
    assert "merged 4 runs into merged: 12 cells" in done.stderr
    compared = shards.cli("diff", "--require-same-cells", "whole", "merged")
    assert compared.stdout.startswith("12 cells in both runs; 0 differ"), compared.stdout
    meta = json.loads((shards.root / "results" / "merged" / "meta.json").read_text())
    assert meta["merged_from"] == ["s1", "s2", "s3", "s4"]
    assert meta["settings"]["shard"] == [1, 1] and meta["settings"]["cells"] == 12
    for record in shards.records("merged"):
        assert (shards.root / "results" / "merged" / "cells" / record["key"] / "journal.jsonl").is_file()
    assert (shards.root / "results" / "latest").read_text().strip() == "merged"
    for run_id, out in (("whole", "r-whole"), ("merged", "r-merged")):
        shards.cli("report", "--run", run_id, "--out", str(shards.root / out))
    pages = {out: sorted(p.name for p in (shards.root / out / "cells").iterdir()) for out in ("r-whole", "r-merged")}
    assert pages["r-whole"] == pages["r-merged"] and len(pages["r-whole"]) == 12


def _edit_meta(scratch, run_id, change):
    path = scratch.root / "results" / run_id / "meta.json"
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("runs", "edit", "needle"),
    [
        (["s1", "s2", "s4"], None, "not every shard of 4: shard 3/4 missing"),
        (["s1", "s2", "s3", "s3"], None, "a run is given twice"),
        (["s1", "s2", "s3", "s4", "whole"], None, "shards of different counts"),
        (["s1", "s2", "s3", "s4"], lambda m: m.update(harness_commit="0" * 40), "the harness commit differs"),
        (
            ["s1", "s2", "s3", "s4"],
            lambda m: m["adapters"]["raw-jsonrpc"].update(runtime_version="3.12.0"),
            "the versions of raw-jsonrpc differs",
        ),
        (["s1", "s2", "s3", "s4"], lambda m: m["settings"].update(cases=["ok"]), "the setting 'cases' differs"),
        (["s1", "nope"], None, "nope"),
    ],
    ids=["missing", "twice", "other-count", "commit", "versions", "selection", "unknown-run"],
)
def test_runs_that_are_not_one_matrix_are_refused_and_nothing_is_written(shards, runs, edit, needle):
    original = (shards.root / "results" / "s4" / "meta.json").read_text()
    if edit is not None:
        _edit_meta(shards, "s4", edit)
    try:
        done = shards.harness("merge", *runs, "--run-id", "refused", check=False)
    finally:
        (shards.root / "results" / "s4" / "meta.json").write_text(original)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], done.stderr
    assert not [p.name for p in (shards.root / "results").iterdir() if "refused" in p.name]


def test_a_cell_recorded_by_two_shards_is_refused(shards):
    records = shards.root / "results" / "s2" / "cells.jsonl"
    original = records.read_text()
    stray = shards.records("s1")[0]
    try:
        records.write_text(original + json.dumps(stray) + "\n")
        done = shards.harness("merge", "s1", "s2", "s3", "s4", "--run-id", "twice", check=False)
    finally:
        records.write_text(original)
    assert done.returncode == 2 and f"cell {stray['key']} is in s1 and in s2" in done.stderr, done.stderr
    assert not (shards.root / "results" / "twice").exists()
