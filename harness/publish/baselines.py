"""Expected-outcome baselines: what a maintainer's CI holds a client to (``baselines/<adapter>.yaml``).

``python -m harness baseline write --run RUN`` stores the outcome of every cell of the run, one
reviewable YAML file per adapter (its cells sorted by key, one line each, with the versions and
the run they came from in a comment). ``python -m harness baseline check --run RUN`` (what
``nox -s check`` runs after running the baselines' adapters) compares a run with them and fails
(exit 1) listing:

- every cell whose outcome differs from its baseline entry (``pass != reject``);
- every cell of the run that has no entry (a new case, a new column): write the baseline again;
- every entry that no longer matches a cell the harness can run (a case or column that is gone:
  *stale*), as the official conformance suite fails on a stale expected-failure.

Entries of cells the run did not select are not checked (counted only), so a CI job may check a
part of its baseline. A baseline file that does not parse, or names another adapter, is one line.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.classify.outcomes import OUTCOMES, cells_frame
from harness.errors import UsageError, read_text
from harness.matrix import cells, manifest
from harness.run.store import RunStore

FORMAT = 1


@dataclass(frozen=True)
class Baseline:
    """One adapter's expected outcomes."""

    path: Path
    adapter: str
    outcomes: dict[str, str]
    """Cell key -> outcome."""


def _header(adapter: str, info: dict[str, Any], run: RunStore, commit: str | None) -> str:
    package = f"{info['package']} {info.get('package_version')}" if info.get("package") else "no SDK"
    runtime = f"{info.get('runtime')} {info.get('runtime_version') or ''}".strip()
    return (
        f"# Expected outcomes of {adapter} ({package}, {runtime}), from run {run.run_id}"
        f" (harness {(commit or 'unknown')[:12]}).\n"
        "# Written by `python -m harness baseline write`; `nox -s check` fails when a cell's outcome differs,\n"
        "# when a cell has no entry, and when an entry no longer matches a cell (stale). Review changes to it.\n"
    )


def write(run: RunStore, directory: Path) -> list[Path]:
    """One baseline file per adapter of ``run`` into ``directory`` (each written whole)."""
    meta = run.read_meta()
    frame = cells_frame(list(run.records()), meta)
    if frame.empty:
        raise UsageError(f"baseline: run {run.run_id} has no cells")
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for adapter, rows in frame.groupby("adapter"):
        name = str(adapter)
        info = dict(meta.get("adapters", {}).get(name, {}))
        data = {
            "baseline": FORMAT,
            "adapter": name,
            "package": info.get("package"),
            "version": info.get("package_version"),
            "run": run.run_id,
            "cells": {
                str(key): str(outcome) for key, outcome in sorted(zip(rows["key"], rows["outcome"], strict=True))
            },
        }
        text = _header(name, info, run, meta.get("harness_commit")) + yaml.safe_dump(
            data, sort_keys=False, default_flow_style=False, width=1000
        )
        path = directory / f"{name}.yaml"
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        written.append(path)
    return written


def load(path: Path) -> Baseline:
    """A baseline file, checked field by field (:class:`UsageError` naming the file and field)."""
    try:
        data = yaml.safe_load(read_text(path, "baseline"))
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict) or data.get("baseline") != FORMAT:
        raise UsageError(f"{path}: not a baseline file of format {FORMAT} (field 'baseline')")
    adapter = data.get("adapter")
    if adapter != path.stem:
        raise UsageError(f"{path}: field 'adapter' is {adapter!r}, but the file is named for {path.stem!r}")
    outcomes = data.get("cells")
    if not isinstance(outcomes, dict):
        raise UsageError(f"{path}: field 'cells': expected a mapping of cell key to outcome")
    for key, outcome in outcomes.items():
        if outcome not in OUTCOMES:
            raise UsageError(f"{path}: cell {key}: outcome {outcome!r} is not one of {', '.join(OUTCOMES)}")
    return Baseline(path, adapter, {str(k): str(v) for k, v in outcomes.items()})


def load_all(directory: Path) -> list[Baseline]:
    if not directory.is_dir():
        raise UsageError(f"baseline: {directory} does not exist (`python -m harness baseline write` makes it)")
    found = [load(path) for path in sorted(directory.glob("*.yaml"))]
    if not found:
        raise UsageError(f"baseline: no baseline file (*.yaml) in {directory}")
    return found


@dataclass(frozen=True)
class Check:
    """A run against the baselines."""

    checked: int
    differing: list[tuple[str, str, str]]
    """``(key, expected, found)``."""
    unlisted: list[str]
    stale: list[str]
    unselected: int

    @property
    def failed(self) -> bool:
        return bool(self.differing or self.unlisted or self.stale)


def check(run: RunStore, baselines: list[Baseline], clients: Path) -> Check:
    """Compare ``run`` with ``baselines``; ``clients``: the adapter directories (for what is stale)."""
    frame = cells_frame(list(run.records()), run.read_meta())
    found = dict(zip(frame["key"], frame["outcome"], strict=True))
    adapters = {baseline.adapter for baseline in baselines}
    runnable = cells.build([a for a in manifest.discover(clients) if a.name in adapters])
    known = {cell.key for cell in runnable} | set(found)  # a cell that ran (a recorded case's) is no stale entry
    expected = {key: outcome for baseline in baselines for key, outcome in baseline.outcomes.items()}
    differing = [
        (key, expected[key], found[key]) for key in sorted(found) if key in expected and found[key] != expected[key]
    ]
    covered = {key for key, adapter in zip(frame["key"], frame["adapter"], strict=True) if adapter in adapters}
    return Check(
        checked=len([key for key in found if key in expected]),
        differing=differing,
        unlisted=sorted(covered - set(expected)),
        stale=sorted(set(expected) - known),
        unselected=len(set(expected) & known - set(found)),
    )


def summary(result: Check, run_id: str, limit: int = 200) -> str:
    """The check in plain text: a count line, then every cell that fails it (at most ``limit`` per kind)."""
    lines = [
        f"{result.checked} cells of run {run_id} checked against the baselines: {len(result.differing)} differ, "
        f"{len(result.unlisted)} not in a baseline, {len(result.stale)} stale entries"
        + (f" ({result.unselected} entries not in this run's selection)" if result.unselected else "")
    ]
    for key, expected, outcome in result.differing[:limit]:
        lines.append(f"  differs: {key}: expected {expected}, got {outcome}")
    for key in result.unlisted[:limit]:
        lines.append(f"  not in a baseline: {key}")
    for key in result.stale[:limit]:
        lines.append(f"  stale: {key} (no such cell any more)")
    if result.failed:
        lines.append("(`python -m harness baseline write --run RUN` records the run's outcomes as the new baseline)")
    return "\n".join(lines)
