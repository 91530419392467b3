"""``python -m harness merge RUN... --run-id ID``: the shard runs of one matrix merged into one run.

N jobs each running ``run --shard K/N`` of the same selection (N CI jobs, say) make N runs; merged,
they are the run one job would have made: the same cells, records, evidence, case files and
metadata, so ``report``, ``diff`` and ``publish`` treat it as any other run (its ``meta.json``
names the runs it came from, ``merged_from``). The merge refuses, naming the run and the value,
runs that cannot be parts of one matrix: another harness commit or backend, another selection or
budget, another version of a client or its runtime, case files that differ, and a set of shards
that is not exactly ``1/N`` to ``N/N`` (one missing, one given twice, another count); and a cell
that two runs recorded. The merged run is written into a staging directory and renamed into
place whole; the shard runs are left as they were.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from harness.errors import UsageError
from harness.matrix.cells import Selection
from harness.records import RunMeta
from harness.run.reuse import write_index
from harness.run.store import BOUNDARY_FILE, RunStore, check_run_id, link_tree, open_run

SAME_SETTINGS = (
    *Selection.FILTERS,
    "case_files",
    "kind",
    "budget_scale",
    "live",
    "shard_costs",
)
"""The settings every shard of one matrix shares (``jobs`` and ``isolation`` may differ by job)."""
VERSION_KEYS = ("package_version", "runtime_version", "image", "image_id")
"""What of an adapter's metadata names the client that ran: it must be the same in every shard."""


def _same(runs: Sequence[tuple[RunStore, RunMeta]], what: str, values: list[Any]) -> None:
    """:class:`UsageError` naming the first run whose ``what`` (``values``, one per run) differs."""
    for (run, _), value in zip(runs[1:], values[1:], strict=True):
        if value != values[0]:
            raise UsageError(f"merge: {what} differs: {values[0]!r} in {runs[0][0].run_id}, {value!r} in {run.run_id}")


def _versions(run_meta: RunMeta, name: str) -> dict[str, Any] | None:
    entry = cast(dict[str, Any] | None, run_meta.get("adapters", {}).get(name))
    return None if entry is None else {key: entry.get(key) for key in VERSION_KEYS}


def check(runs: Sequence[tuple[RunStore, RunMeta]]) -> None:
    """:class:`UsageError` unless ``runs`` are the complete set of shards of one matrix."""
    if len(runs) < 2:
        raise UsageError("merge: give two or more shard runs")
    ids = [run.run_id for run, _ in runs]
    if len(set(ids)) != len(ids):
        raise UsageError(f"merge: a run is given twice ({', '.join(ids)})")
    shards = sorted((tuple(m["settings"]["shard"]), run.run_id) for run, m in runs)
    counts = {count for (_, count), _ in shards}
    if len(counts) != 1:
        shown = ", ".join(f"{run_id} {index}/{count}" for (index, count), run_id in shards)
        raise UsageError(f"merge: the runs are shards of different counts ({shown})")
    count = counts.pop()
    indices = [index for (index, _), _ in shards]
    if indices != list(range(1, count + 1)):
        missing = sorted(set(range(1, count + 1)) - set(indices))
        twice = sorted({index for index in indices if indices.count(index) > 1})
        parts = [f"shard {', '.join(f'{i}/{count}' for i in missing)} missing" if missing else ""]
        parts.append(f"shard {', '.join(f'{i}/{count}' for i in twice)} given twice" if twice else "")
        raise UsageError(f"merge: not every shard of {count}: {'; '.join(p for p in parts if p)}")
    _same(runs, "the harness commit", [m.get("harness_commit") for _, m in runs])
    _same(runs, "the backend", [m.get("backend") for _, m in runs])
    for setting in SAME_SETTINGS:
        _same(runs, f"the setting {setting!r}", [cast(dict[str, Any], m["settings"]).get(setting) for _, m in runs])
    for name in sorted({name for _, m in runs for name in m.get("adapters", {})}):
        _same(runs, f"the versions of {name}", [_versions(m, name) for _, m in runs])
    _check_case_files([run for run, _ in runs])


def _case_file_texts(run: RunStore) -> dict[str, bytes]:
    directory = run.case_files_dir
    return {path.name: path.read_bytes() for path in sorted(directory.glob("*.json"))} if directory.is_dir() else {}


def _check_case_files(runs: list[RunStore]) -> None:
    first = _case_file_texts(runs[0])
    for run in runs[1:]:
        if _case_file_texts(run) != first:
            raise UsageError(f"merge: the case files of {run.run_id} differ from those of {runs[0].run_id}")


def merged_meta(runs: Sequence[tuple[RunStore, RunMeta]], run_id: str, cells: int) -> RunMeta:
    """The metadata of the merged run: the first shard's, over the whole selection and time span."""
    merged: RunMeta = json.loads(json.dumps(runs[0][1]))
    merged["run_id"] = run_id
    merged["started"] = min(m["started"] for _, m in runs)
    finished = [m.get("finished") for _, m in runs]
    merged["finished"] = None if None in finished else max(f for f in finished if f is not None)
    merged["settings"]["shard"] = [1, 1]
    merged["settings"]["cells"] = cells
    failures: dict[str, str] = {}
    for _, run_meta in runs:
        failures.update(run_meta.get("prepare_failures", {}))
    merged["prepare_failures"] = failures
    merged["merged_from"] = [run.run_id for run, _ in sorted(runs, key=lambda r: r[1]["settings"]["shard"][0])]
    return merged


def _boundary(runs: list[RunStore]) -> Path | None:
    """The boundary probe's summary to keep: the one shard that has one, or several identical."""
    found = [run.boundary_path for run in runs if run.boundary_path.is_file()]
    if len({path.read_bytes() for path in found}) > 1:
        shown = ", ".join(path.parent.name for path in found)
        raise UsageError(f"merge: several shards hold a different boundary probe ({shown}); probe the merged run")
    return found[0] if found else None


def merge(results: Path, run_ids: Sequence[str], run_id: str) -> RunStore:
    """Merge the shard runs ``run_ids`` of ``results`` into the new run ``run_id``."""
    target = RunStore(results / check_run_id(run_id))
    if target.directory.exists():
        raise UsageError(f"merge: {target.directory} exists; choose another --run-id")
    runs = [(run, run.read_meta()) for run in (open_run(results, rid) for rid in run_ids)]
    check(runs)
    seen: dict[str, RunStore] = {}
    records = []
    for run, _ in sorted(runs, key=lambda r: r[1]["settings"]["shard"][0]):
        for record in run.records():
            if record["key"] in seen:
                raise UsageError(f"merge: cell {record['key']} is in {seen[record['key']].run_id} and in {run.run_id}")
            seen[record["key"]] = run
            records.append(record)
    boundary = _boundary([run for run, _ in runs])
    staging = RunStore(results / f".{run_id}.merging")
    if staging.directory.exists():
        shutil.rmtree(staging.directory)
    try:
        (staging.directory / "cells").mkdir(parents=True)
        for key, run in seen.items():
            if run.cell_dir(key).is_dir():
                link_tree(run.cell_dir(key), staging.cell_dir(key))
        if runs[0][0].case_files_dir.is_dir():
            shutil.copytree(runs[0][0].case_files_dir, staging.case_files_dir)
        if boundary is not None:
            shutil.copy2(boundary, staging.directory / BOUNDARY_FILE)
        with open(staging.records_path, "w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        staging.write_meta(merged_meta(runs, run_id, len(records)))
        write_index(staging)
        os.rename(staging.directory, target.directory)
    except BaseException:
        shutil.rmtree(staging.directory, ignore_errors=True)
        raise
    (results / "latest").write_text(run_id + "\n")
    return target
