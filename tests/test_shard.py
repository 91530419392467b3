"""Shards (``run --shard I/N``, harness/matrix/cells.py) split a selection into disjoint parts, whose union is all."""

from __future__ import annotations

import re

import pytest

from harness.matrix import cells, manifest

from .conftest import REPO

SHARDS = 3


def test_shards_of_the_whole_matrix_partition_it():
    adapters = manifest.discover(REPO / "clients")
    whole = [cell.key for cell in cells.build(adapters)]
    parts = [
        [cell.key for cell in cells.build(adapters, cells.Selection(shard=(index, SHARDS)))]
        for index in range(1, SHARDS + 1)
    ]
    assert len(whole) == len(set(whole)) > 1000
    assert sum(len(part) for part in parts) == len(whole), "disjoint"
    assert set().union(*parts) == set(whole), "together, the unsharded selection"
    assert max(map(len, parts)) - min(map(len, parts)) <= 1, "even"


@pytest.mark.slow
def test_sharded_runs_record_disjoint_parts_of_the_selection(checkout):
    scratch = checkout("raw-jsonrpc")
    selection = ["--adapter", "raw-jsonrpc", "--case", "ok", "--case", "type-swap", "--transport", "stdio"]
    listed = scratch.cli("list", *selection).stdout.strip().splitlines()[-1]
    total = int(re.fullmatch(r"(\d+) cells", listed).group(1))
    unsharded = {
        cell.key
        for cell in cells.build(
            manifest.discover(scratch.root / "clients"),
            cells.Selection(("raw-jsonrpc",), ("ok", "type-swap"), transports=("stdio",)),
        )
    }
    assert total == len(unsharded) == 2 * 2 * 2, "2 cases x 2 schema modes x 2 protocol revisions"
    recorded = []
    for index in range(1, SHARDS + 1):
        run_id = f"shard{index}"
        scratch.harness("run", *selection, "--shard", f"{index}/{SHARDS}", "--run-id", run_id, "--jobs", "2")
        recorded.append([record["key"] for record in scratch.records(run_id)])
    assert all(recorded), "every shard has cells"
    assert sum(len(keys) for keys in recorded) == total, "disjoint, each cell once"
    assert set().union(*recorded) == unsharded
