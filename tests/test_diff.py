"""``python -m harness diff``: two real runs compared cell by cell."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_diff_reports_changed_and_missing_cells(checkout):
    scratch = checkout("raw-jsonrpc", "crash")
    common = ("--case", "ok", "--transport", "stdio", "--protocol", "2025-11-25")
    scratch.harness("run", "--run-id", "a", "--adapter", "raw-jsonrpc", *common)
    scratch.harness("run", "--run-id", "b", *common)
    scratch.harness("run", "--run-id", "starved", "--adapter", "raw-jsonrpc", "--budget-scale", "0.0005", *common)

    same = scratch.cli("diff", "a", "b")
    assert "2 cells in both runs; 0 differ" in same.stdout
    assert "2 cells only in b" in same.stdout

    uneven = scratch.cli("diff", "a", "b", "--require-same-cells", check=False)
    assert uneven.returncode == 1

    changed = scratch.cli("diff", "a", "starved", check=False)
    assert changed.returncode == 1
    assert "2 differ" in changed.stdout
    assert (
        "raw-jsonrpc--default--ok--advertised--stdio--2025-11-25: outcome: pass (a) != timeout (starved)"
        in changed.stdout
    )

    missing = scratch.cli("diff", "a", "nope", check=False)
    assert missing.returncode == 2 and "no such run" in missing.stderr
