"""What changed from one run to a later one, as the published site shows it (``changes/<a>..<b>.html``).

The cells both runs recorded are compared as ``python -m harness diff`` compares them
(:func:`harness.publish.diff.compare_runs`: outcome, follow-up, altered, model channel, whether isError
reached the model). A differing cell's *transition* names what changed: ``pass → reject`` when its
outcome did, else the outcome and the other values that did (``pass (model_channel: text → both)``).
Cells are grouped by column and transition, and every client whose version (or runtime's) differs
between the runs is named with the transitions of its columns, so that "ts-sdk 1.32.1 → 1.33.0: 4
cells pass → reject" reads at a glance. An adapter that a run has at one version only is matched by
its name without the version (:func:`aligned`), so a run of the pinned ``ts-sdk`` and a run of
``--with ts-sdk@1.29.0`` compare cell for cell, as two runs before and after a pin was bumped do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

from harness.classify.outcomes import cells_frame
from harness.matrix.catalog import Protocol, SchemaMode, Transport
from harness.run.store import RunStore

from . import diff


@dataclass(frozen=True)
class Cell:
    """One differing cell: its key in each run and its coordinates (for the links to the evidence)."""

    key_a: str
    key_b: str
    case: str
    schema: SchemaMode
    transport: Transport
    protocol: Protocol


@dataclass(frozen=True)
class Transition:
    """The cells of one column that changed the same way."""

    column: str
    adapter: str
    label: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class VersionChange:
    """A client (or its runtime) whose version differs between the runs, and what its columns did."""

    adapter: str
    what: str
    before: str | None
    after: str | None
    transitions: tuple[tuple[str, int], ...]
    """``(label, cells)`` over the adapter's columns, most cells first."""

    @property
    def headline(self) -> str:
        moved = ", ".join(f"{count} {'cell' if count == 1 else 'cells'} {label}" for label, count in self.transitions)
        return (
            f"{self.adapter} {self.what} {self.before or 'none'} → {self.after or 'none'}: {moved or 'no cell changed'}"
        )


@dataclass(frozen=True)
class Changes:
    """Run ``a`` against the later run ``b``."""

    a: str
    b: str
    shared: int
    transitions: tuple[Transition, ...]
    versions: tuple[VersionChange, ...]
    only_a: int
    only_b: int

    @property
    def changed(self) -> int:
        return sum(len(t.cells) for t in self.transitions)


def _label(values: dict[str, Any]) -> str:
    before, after = values["outcome_a"], values["outcome_b"]
    others = [  # a value one side does not have (a timeout has no "altered") is no change of its own
        f"{column}: {values[f'{column}_a']} → {values[f'{column}_b']}"
        for column in diff.COMPARED[1:]
        if values[f"{column}_a"] != values[f"{column}_b"] and "-" not in (values[f"{column}_a"], values[f"{column}_b"])
    ]
    if before != after:
        return f"{before} → {after}" + (f" ({'; '.join(others)})" if others else "")
    return f"{after} ({'; '.join(others)})"


def aligned(frame: pd.DataFrame) -> pd.DataFrame:
    """A run's classified cells (``cells_frame``) indexed by their key, with the adapter named without its version
    where the run has that adapter at one version only (``ts-sdk@1.29.0--call-only--...`` as
    ``ts-sdk--call-only--...``); ``run_key`` keeps the key, ``base`` the adapter's name."""
    base = frame["adapter"].map(lambda name: str(name).split("@")[0])
    single = frame.groupby(base)["adapter"].transform("nunique") == 1
    keys = [
        base_name + str(key)[len(str(adapter)) :] if alone else str(key)
        for key, adapter, base_name, alone in zip(frame["key"], frame["adapter"], base, single, strict=True)
    ]
    frame = frame.assign(run_key=frame["key"], base=base.where(single, frame["adapter"]))
    return frame.set_index(pd.Index(keys, name="key"))


def _versions(
    a: pd.DataFrame, b: pd.DataFrame, meta_a: dict[str, Any], meta_b: dict[str, Any]
) -> list[tuple[str, str, str | None, str | None]]:
    """``(adapter, what, before, after)`` for every version that differs between the runs' clients
    (an adapter matched by its name without the version, as the cells are)."""
    names_a = dict(zip(a["base"], a["adapter"], strict=True))
    names_b = dict(zip(b["base"], b["adapter"], strict=True))
    found = []
    for base in sorted(set(names_a) & set(names_b)):
        entry_a = cast(dict[str, Any], meta_a.get(str(names_a[base]), {}))
        entry_b = cast(dict[str, Any], meta_b.get(str(names_b[base]), {}))
        for key, what in (("package_version", entry_b.get("package") or "package"), ("runtime_version", "runtime")):
            if entry_a.get(key) != entry_b.get(key):
                found.append((str(base), str(what), entry_a.get(key), entry_b.get(key)))
    return found


def between(a: RunStore, b: RunStore, frames: Mapping[str, pd.DataFrame] | None = None) -> Changes:
    """What changed from run ``a`` to run ``b`` (``frames``: their ``cells_frame`` by run id, when
    the caller has them already)."""
    left, right = (
        aligned(frames[run.run_id] if frames else cells_frame(list(run.records()), run.read_meta())) for run in (a, b)
    )
    found = diff.compare_frames(left, right)
    grouped: dict[tuple[str, str, str], list[Cell]] = {}
    for values in found.differing.to_dict("records"):
        row, before = right.loc[values["key"]], left.loc[values["key"]]
        cell = Cell(
            str(before["run_key"]), str(row["run_key"]), str(row["case"]), cast(SchemaMode, str(row["schema"])),
            cast(Transport, str(row["transport"])), cast(Protocol, str(row["protocol"])),
        )  # fmt: skip
        grouped.setdefault((str(row["client"]), str(row["base"]), _label(values)), []).append(cell)
    transitions = tuple(
        Transition(column, adapter, label, tuple(cells)) for (column, adapter, label), cells in sorted(grouped.items())
    )
    versions = []
    meta_a, meta_b = dict(a.read_meta().get("adapters", {})), dict(b.read_meta().get("adapters", {}))
    for adapter, what, before_version, after_version in _versions(left, right, meta_a, meta_b):
        counts: Counter[str] = Counter()
        for transition in transitions:
            if transition.adapter == adapter:
                counts[transition.label] += len(transition.cells)
        versions.append(VersionChange(adapter, what, before_version, after_version, tuple(counts.most_common())))
    return Changes(a.run_id, b.run_id, found.shared, transitions, tuple(versions), len(found.only_a), len(found.only_b))
