"""Expected-outcome baselines: ``baseline write`` stores a real run's outcomes, ``baseline check``
fails on a run whose cells differ, on cells without an entry, and on stale entries.

The differing run is real too: the ``latency`` case with a budget too short for its 2 s delay
times out where the baseline says pass.
"""

from __future__ import annotations

import pytest
import yaml

from .conftest import Checkout

SELECTION = ["--adapter", "raw-jsonrpc", "--case", "latency", "--case", "ok", "--transport", "stdio",
             "--protocol", "2025-11-25", "--jobs", "2"]  # fmt: skip
SHORT = ["--adapter", "raw-jsonrpc", "--case", "latency", "--transport", "stdio", "--protocol", "2025-11-25",
         "--budget-scale", "0.1"]  # fmt: skip
"""The case answers after 2 s: at a tenth of the budget (a 1.8 s client timeout) its cells time out
however loaded the machine is (the ``ok`` cells are left out: at that budget a loaded machine could
time them out too)."""
LATENCY = "raw-jsonrpc--default--latency--{}--stdio--2025-11-25"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    checkout = Checkout(tmp_path_factory.mktemp("baselines") / "checkout", ["raw-jsonrpc"])
    checkout.harness("run", *SELECTION, "--run-id", "base")
    checkout.harness("run", *SHORT, "--run-id", "short")
    checkout.harness("run", *SELECTION, "--case", "type-swap", "--run-id", "more")
    done = checkout.harness("baseline", "write", "--run", "base")
    assert "baseline: 1 files" in done.stderr
    return checkout


def test_the_baseline_is_one_reviewable_yaml_file_per_adapter(scratch):
    path = scratch.root / "baselines" / "raw-jsonrpc.yaml"
    text = path.read_text()
    assert text.startswith("# Expected outcomes of raw-jsonrpc (no SDK, python ")
    data = yaml.safe_load(text)
    assert data["adapter"] == "raw-jsonrpc" and data["run"] == "base"
    assert data["cells"] == {
        f"raw-jsonrpc--default--{case}--{mode}--stdio--2025-11-25": "pass"
        for case in ("latency", "ok")
        for mode in ("advertised", "hidden")
    }
    assert f"  {LATENCY.format('advertised')}: pass\n" in text, "one line per cell"


def test_the_run_it_came_from_matches_it(scratch):
    done = scratch.cli("baseline", "check", "--run", "base")
    assert done.returncode == 0
    assert done.stdout.startswith("4 cells of run base checked against the baselines: 0 differ")


def test_a_run_whose_outcomes_differ_fails_listing_every_cell(scratch):
    done = scratch.cli("baseline", "check", "--run", "short", check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("2 cells of run short checked against the baselines: 2 differ")
    for mode in ("advertised", "hidden"):
        assert f"  differs: {LATENCY.format(mode)}: expected pass, got timeout" in lines


def test_cells_without_an_entry_and_stale_entries_fail(scratch):
    path = scratch.root / "baselines" / "raw-jsonrpc.yaml"
    original = path.read_text()
    gone = "raw-jsonrpc--default--no-such-case--advertised--stdio--2025-11-25"
    path.write_text(original + f"  {gone}: reject\n")
    try:
        done = scratch.cli("baseline", "check", "--run", "more", check=False)
    finally:
        path.write_text(original)
    assert done.returncode == 1
    assert "0 differ, 2 not in a baseline, 1 stale entries" in done.stdout.splitlines()[0]
    assert "  not in a baseline: raw-jsonrpc--default--type-swap--advertised--stdio--2025-11-25" in done.stdout
    assert f"  stale: {gone} (no such cell any more)" in done.stdout


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("cells: [unclosed", "not YAML"),
        ("baseline: 7\nadapter: raw-jsonrpc\ncells: {}\n", "not a baseline file of format 1"),
        ("baseline: 1\nadapter: ts-sdk\ncells: {}\n", "field 'adapter' is 'ts-sdk'"),
        ("baseline: 1\nadapter: raw-jsonrpc\ncells: {a: fine}\n", "outcome 'fine' is not one of"),
    ],
    ids=["not-yaml", "format", "adapter", "outcome"],
)
def test_a_bad_baseline_file_is_one_line(scratch, tmp_path, content, needle):
    (tmp_path / "raw-jsonrpc.yaml").write_text(content)
    done = scratch.cli("baseline", "check", "--run", "base", "--dir", str(tmp_path), check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "raw-jsonrpc.yaml" in lines[0], done.stderr
