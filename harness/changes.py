"""What changed from one run to a later one, as the published site shows it (``changes/<a>..<b>.html``).

The cells both runs recorded are compared as ``python -m harness diff`` compares them
(:func:`harness.diff.compare_runs`: outcome, follow-up, altered, model channel, whether isError
reached the model). A differing cell's *transition* names what changed: ``pass → reject`` when its
outcome did, else the outcome and the other values that did (``pass (model_channel: text → both)``).
Cells are grouped by column and transition, and every client whose version (or runtime's) differs
between the runs is named with the transitions of its columns, so that "ts-sdk 1.32.1 → 1.33.0: 4
cells pass → reject" reads at a glance.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, cast

from . import diff
from .classify import cells_frame
from .store import RunStore


@dataclass(frozen=True)
class Cell:
    """One differing cell: its key and coordinates (for the links to both runs' evidence)."""

    key: str
    case: str
    schema: str
    transport: str
    protocol: str


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


def _versions(a: RunStore, b: RunStore) -> list[tuple[str, str, str | None, str | None]]:
    """``(adapter, what, before, after)`` for every version that differs between the runs' clients."""
    adapters_a, adapters_b = a.read_meta().get("adapters", {}), b.read_meta().get("adapters", {})
    found = []
    for name in sorted(set(adapters_a) & set(adapters_b)):
        entry_a, entry_b = cast(dict[str, Any], adapters_a[name]), cast(dict[str, Any], adapters_b[name])
        for key, what in (("package_version", entry_b.get("package") or "package"), ("runtime_version", "runtime")):
            if entry_a.get(key) != entry_b.get(key):
                found.append((name, str(what), entry_a.get(key), entry_b.get(key)))
    return found


def between(a: RunStore, b: RunStore) -> Changes:
    """What changed from run ``a`` to run ``b``."""
    found = diff.compare_runs(a, b)
    frame = cells_frame(list(b.records()), b.read_meta()).set_index("key")
    grouped: dict[tuple[str, str, str], list[Cell]] = {}
    for values in found.differing.to_dict("records"):
        row = frame.loc[values["key"]]
        cell = Cell(values["key"], str(row["case"]), str(row["schema"]), str(row["transport"]), str(row["protocol"]))
        grouped.setdefault((str(row["client"]), str(row["adapter"]), _label(values)), []).append(cell)
    transitions = tuple(
        Transition(column, adapter, label, tuple(cells)) for (column, adapter, label), cells in sorted(grouped.items())
    )
    versions = []
    for adapter, what, before, after in _versions(a, b):
        counts: Counter[str] = Counter()
        for transition in transitions:
            if transition.adapter == adapter:
                counts[transition.label] += len(transition.cells)
        versions.append(VersionChange(adapter, what, before, after, tuple(counts.most_common())))
    return Changes(a.run_id, b.run_id, found.shared, transitions, tuple(versions), len(found.only_a), len(found.only_b))
