"""Reuse: a cell runs again only when an input that decides its outcome changed, and says so.

Real runs of the ``raw-jsonrpc`` column against the reference server; the inputs themselves are
checked in-process (``harness.run.inputs``) against a scratch copy of what changes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.layout import Layout
from harness.matrix import cells, manifest
from harness.matrix.cells import TOOL_CALL, Live, LiveServer
from harness.run import inputs, reuse, shards
from harness.system.process import kill_by_marker

from .conftest import REPO, Checkout

STDIO = ["--transport", "stdio", "--protocol", "2025-11-25"]
CASES = ["--case", "ok", "--case", "type-swap", "--case", "error"]  # x 2 schema modes: 6 cells


def _copy_adapter(scratch: Checkout, name: str) -> Path:
    """Make the checkout's adapter a copy of the repository's (so that a test can edit it)."""
    target = scratch.root / "clients" / name
    target.unlink()
    shutil.copytree(REPO / "clients" / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _reused(scratch: Checkout, run_id: str) -> dict[str, str | None]:
    return {record["key"]: record.get("reused_from") for record in scratch.records(run_id)}


def test_a_second_run_reuses_every_cell_with_its_evidence_and_fresh_runs_them_all(checkout):
    scratch = checkout("raw-jsonrpc")
    scratch.harness("run", "--run-id", "first", *CASES, *STDIO)
    second = scratch.harness("run", "--run-id", "second", *CASES, *STDIO)
    assert "reuse: 6 cells from first (6)" in second.stderr
    assert "0 cells ran in" in second.stderr and "6 reused from first (6)" in second.stderr
    assert set(_reused(scratch, "second").values()) == {"first"}
    for record in scratch.records("second"):
        old, new = (scratch.root / "results" / run / "cells" / record["key"] for run in ("first", "second"))
        assert sorted(p.name for p in new.iterdir()) == sorted(p.name for p in old.iterdir())
        assert (new / "observation.json").stat().st_ino == (old / "observation.json").stat().st_ino, "hard-linked"
    first = {record["key"]: record for record in scratch.records("first")}
    assert all(record["finished_at"] == first[record["key"]]["finished_at"] for record in scratch.records("second"))
    assert scratch.cli("diff", "first", "second").stdout.startswith("6 cells in both runs; 0 differ")

    scratch.cli("report", "--run", "second")
    page = (scratch.root / "reports" / "index.html").read_text()
    assert "6 cells: 0 ran, 6 reused from first" in page
    evidence = next((scratch.root / "reports" / "cells").glob("*.html")).read_text()
    assert "in run first: reused" in evidence

    third = scratch.harness("run", "--run-id", "third", *CASES, *STDIO, "--fresh")
    assert "reuse:" not in third.stderr and "6 cells ran in" in third.stderr
    assert set(_reused(scratch, "third").values()) == {None}
    assert scratch.meta("third")["settings"]["fresh"] is True
    assert scratch.cli("diff", "second", "third").stdout.startswith("6 cells in both runs; 0 differ")


def test_a_change_to_an_adapter_runs_its_cells_and_says_why(checkout):
    scratch = checkout("raw-jsonrpc", "python-mcp")
    adapter = _copy_adapter(scratch, "raw-jsonrpc")
    selection = ["--case", "ok", *STDIO]  # raw-jsonrpc: 2 cells, python-mcp: 4
    scratch.harness("run", "--run-id", "before", *selection)
    with open(adapter / "adapter.py", "a", encoding="utf-8") as source:
        source.write("# one line more\n")
    after = scratch.harness("run", "--run-id", "after", *selection)
    assert "reuse: 4 cells from before (4)" in after.stderr
    assert "reuse: 2 cells to run: changed since before: adapter (2)" in after.stderr
    reused = _reused(scratch, "after")
    assert {key for key, source in reused.items() if source is None} == {
        key for key in reused if key.startswith("raw-jsonrpc--")
    }
    assert all(record["inputs"]["digest"] for record in scratch.records("after"))


def _cell_list() -> list[cells.Cell]:
    adapters = [a for a in manifest.discover(REPO / "clients") if a.name in ("raw-jsonrpc", "ts-sdk")]
    return cells.build(adapters, cells.Selection(cases=("ok", "type-swap"), protocols=("2025-11-25",)))


def _digests(layout: Layout) -> inputs.Digests:
    return inputs.Digests(layout, "local", lambda adapter: f"environment of {adapter.name}")


def test_the_digest_follows_the_case_the_server_and_the_coordinates(tmp_path):
    every = _cell_list()
    layout = Layout(REPO)
    before = {cell.key: _digests(layout).of(cell) for cell in every}
    assert all(before.values()) and len({v["digest"] for v in before.values() if v}) == len(every)
    again = {cell.key: _digests(layout).of(cell) for cell in every}
    assert again == before, "computed twice, the same"

    # one catalog case changed: only its cells
    changed = [
        dataclasses.replace(cell, case=dataclasses.replace(cell.case, budget_s=17.0))
        if cell.case.id == "type-swap"
        else cell
        for cell in every
    ]
    after = {cell.key: _digests(layout).of(cell) for cell in changed}
    moved = {key for key in before if before[key] != after[key]}
    assert moved == {cell.key for cell in every if cell.case.id == "type-swap"}
    assert all(inputs.changed(before[key], after[key]) == ["cell", "case"] for key in moved)  # type: ignore[arg-type]

    # one file of the reference server changed: every cell
    root = tmp_path / "checkout"
    shutil.copytree(REPO / "servers", root / "servers", ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    (root / "clients").symlink_to(REPO / "clients")
    copied = {cell.key: _digests(Layout(root)).of(cell) for cell in every}
    assert copied == before, "the same sources elsewhere: the same inputs"
    with open(root / "servers" / "reference" / "cases.py", "a", encoding="utf-8") as source:
        source.write("# one line more\n")
    edited = {cell.key: _digests(Layout(root)).of(cell) for cell in every}
    assert all(inputs.changed(before[key], edited[key]) == ["server"] for key in before)  # type: ignore[arg-type]

    # another environment (a rebuilt lockfile, another image): that adapter's cells only
    other = inputs.Digests(layout, "local", lambda a: "rebuilt" if a.name == "ts-sdk" else f"environment of {a.name}")
    rebuilt = {cell.key: other.of(cell) for cell in every}
    moved = {key for key in before if before[key] != rebuilt[key]}
    assert moved == {c.key for c in every if c.adapter.name == "ts-sdk"}


def test_every_harness_file_the_inputs_name_exists():
    """A file the harness part names but that is not there would hash as absent, and its changes go unseen."""
    named = [*inputs.RUN_MODULES, *inputs.KIND_MODULES["host"]]
    named += [name for names in (*inputs.RUNTIME_MODULES.values(), *inputs.BACKEND_MODULES.values()) for name in names]
    assert [name for name in named if not (inputs.HARNESS / name).exists()] == []


def test_a_live_cell_has_no_inputs_and_is_never_reused():
    cell = _cell_list()[0]
    live = dataclasses.replace(cell, source=Live(LiveServer(command=("server",)), TOOL_CALL))
    assert _digests(Layout(REPO)).of(live) is None


def _kill_orphans(scratch: Checkout, timeout_s: float = 30) -> None:
    deadline, quiet = time.monotonic() + timeout_s, 0
    while quiet < 2 and time.monotonic() < deadline:
        kill_by_marker(str(scratch.root))
        time.sleep(0.2)
        quiet = 0 if scratch.processes_left() else quiet + 1


def _wait_for(condition, what: str, timeout_s: float = 120) -> None:
    """Wait for an event (``condition`` true); fail naming ``what`` when it does not come."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _call_in_flight(journal: Path) -> bool:
    try:
        lines = journal.read_text().splitlines()
    except OSError:
        return False
    return any('"recv"' in line and '"tools/call"' in line for line in lines)


def test_sigkill_with_an_http_cell_in_flight_then_resume_runs_it_from_an_empty_directory(checkout):
    """The killed attempt's files (the warm server's stdout FIFO among them) are not the new attempt's."""
    scratch = checkout("raw-jsonrpc")
    selection = ["--case", "latency", "--case", "ok", "--transport", "http-json", "--protocol", "2025-11-25"]
    command = scratch.argv("run", "--run-id", "k", *selection, "--jobs", "1", "--wait-jobs", "0")
    quiet = subprocess.DEVNULL
    run = subprocess.Popen(command, cwd=REPO, stdout=quiet, stderr=quiet, start_new_session=True)
    in_flight = scratch.root / "results" / "k" / "cells"
    key = "raw-jsonrpc--default--latency--advertised--http-json--2025-11-25"
    try:
        _wait_for(lambda: _call_in_flight(in_flight / key / "journal.jsonl"), "the HTTP cell's tools/call")
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
        _kill_orphans(scratch)
    assert (in_flight / key / "server-stdout.fifo").exists(), "the killed attempt left its FIFO"
    assert key not in {record["key"] for record in scratch.records("k")}

    scratch.harness("run", "--resume", "k")
    records = {record["key"]: record for record in scratch.records("k")}
    assert len(records) == 4 and all(record["harness_error"] is None for record in records.values())
    assert records[key]["observation"]["calls"][0]["status"] == "returned"
    assert scratch.processes_left() == []


@pytest.mark.parametrize("damage", ["no-cell-directory", "observation-garbage", "unfinished", "torn-line", "no-index"])
def test_a_damaged_earlier_run_is_not_reused_from_and_the_run_says_why(checkout, damage):
    scratch = checkout("raw-jsonrpc")
    scratch.harness("run", "--run-id", "old", *CASES, *STDIO)
    run = scratch.root / "results" / "old"
    victim = "raw-jsonrpc--default--type-swap--hidden--stdio--2025-11-25"
    if damage == "no-cell-directory":
        shutil.rmtree(run / "cells" / victim)
        said, ran = f"reuse: old/{victim} runs again: its cell directory is missing", 1
    elif damage == "observation-garbage":
        (run / "cells" / victim / "observation.json").write_text('{"contract": 1, "calls": [')
        said, ran = f"reuse: old/{victim} runs again: observation.json does not parse", 1
    elif damage == "unfinished":
        meta = json.loads((run / "meta.json").read_text())
        (run / "meta.json").write_text(json.dumps({**meta, "finished": None}))
        said, ran = "reuse: not from run old: unfinished (interrupted or still running)", 6
    elif damage == "torn-line":
        lines = (run / "cells.jsonl").read_text().splitlines()
        (run / "cells.jsonl").write_text("\n".join([*lines[:-1], lines[-1][: len(lines[-1]) // 2]]))
        said, ran = "reuse: not from run old: cells.jsonl line 6 does not parse", 6
    else:
        (run / reuse.INDEX_FILE).unlink()
        said, ran = "reuse: not from run old: no inputs.json (a run from before reuse)", 6
    done = scratch.harness("run", "--run-id", "new", *CASES, *STDIO)
    assert said in done.stderr
    assert f"{ran} cells ran in" in done.stderr
    assert sum(source is None for source in _reused(scratch, "new").values()) == ran
    noted = scratch.meta("new")["reuse"]
    assert noted["skipped_cells" if ran == 1 else "skipped_runs"], noted


def _index(wall_ms: dict[str, float]) -> reuse.Index:
    return reuse.Index(run=None, cells={}, failed={}, wall_ms=wall_ms)  # type: ignore[arg-type]


def test_shards_by_cost_deal_the_longest_cells_first_and_fall_back_to_count():
    every = _cell_list()
    walls = {cell.key: (30_000.0 if cell.adapter.name == "ts-sdk" else 100.0) for cell in every[:-3]}
    source = _index(walls)
    parts = [shards.split(every, index, 3, source) for index in (1, 2, 3)]
    assert sorted(cell.key for part in parts for cell in part) == sorted(cell.key for cell in every), "a partition"
    estimated = shards.costs(every, source)
    loads = [sum(estimated[cell.key] for cell in part) for part in parts]
    assert max(loads) <= 1.15 * sum(loads) / 3
    for part in parts:
        positions = [every.index(cell) for cell in part]
        assert positions == sorted(positions), "each shard in the matrix's order"
    by_count = [shards.split(every, index, 3, None) for index in (1, 2, 3)]
    assert by_count == [cells.by_count(every, index, 3) for index in (1, 2, 3)]


def test_shards_of_one_history_split_alike_and_merge(checkout):
    scratch = checkout("raw-jsonrpc")
    selection = [*CASES, *STDIO]
    scratch.harness("run", "--run-id", "whole", *selection)
    for index in (1, 2):
        scratch.harness("run", "--run-id", f"s{index}", *selection, "--shard", f"{index}/2", "--fresh")
    assert {scratch.meta(f"s{index}")["settings"]["shard_costs"] for index in (1, 2)} == {"whole"}
    keys = [set(_reused(scratch, f"s{index}")) for index in (1, 2)]
    assert not keys[0] & keys[1] and keys[0] | keys[1] == set(_reused(scratch, "whole"))
    scratch.harness("merge", "s1", "s2", "--run-id", "merged")
    assert scratch.cli("diff", "whole", "merged", "--require-same-cells").returncode == 0
    assert (scratch.root / "results" / "merged" / reuse.INDEX_FILE).is_file(), "a merged run is a source too"


def test_the_probe_reuses_a_search_with_its_evidence_and_runs_one_whose_evidence_is_gone(checkout):
    scratch = checkout("raw-jsonrpc")
    probe = ["--adapter", "raw-jsonrpc", "--kind", "text", "--max-bytes", "65536"]
    for run_id in ("a", "b"):
        scratch.harness("run", "--run-id", run_id, "--case", "ok", *STDIO, "--fresh")
    scratch.harness("probe", "--run", "a", *probe)
    again = scratch.harness("probe", "--run", "b", *probe)
    assert "no limit up to 65,536 (1 probes), reused from a" in again.stderr
    entry = json.loads((scratch.root / "results" / "b" / "boundary.json").read_text())[0]
    assert entry["reused_from"] == "a" and entry["inputs"]["digest"]
    probes = scratch.root / "results" / "b" / "boundary" / "cells"
    assert [p.name for p in probes.iterdir()] == ["raw-jsonrpc--default--probe-text-65536--none--stdio--2025-11-25"]

    shutil.rmtree(scratch.root / "results" / "a" / "boundary")
    shutil.rmtree(scratch.root / "results" / "b" / "boundary")
    (scratch.root / "results" / "b" / "boundary.json").unlink()
    ran = scratch.harness("probe", "--run", "b", *probe)
    assert "reused" not in ran.stderr and "no limit up to 65,536 (1 probes)" in ran.stderr
    fresh = scratch.harness("probe", "--run", "b", *probe, "--fresh")
    assert "reused" not in fresh.stderr


def test_the_conformance_result_is_reused_while_its_inputs_hold(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("conformance_run", REPO / "servers" / "conformance" / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    args = run.argparse.Namespace(transport="http-sse", revision=None, group=None, scenario=[])
    digest = run.inputs_digest(args)
    assert digest == run.inputs_digest(args)
    assert digest != run.inputs_digest(run.argparse.Namespace(**{**vars(args), "transport": "http-json"}))
    output = tmp_path / "last-result.json"
    output.write_text(json.dumps({"inputs": digest, "counts": {}, "passed": True, "date": "then"}))
    assert run.reused(output, digest)["date"] == "then"
    assert run.reused(output, "other inputs") is None and not output.exists(), "a result of other inputs is removed"
