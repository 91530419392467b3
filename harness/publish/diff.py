"""Comparing two runs cell by cell: did a client's behaviour change, does a backend agree?

Two runs are compared on the cells both of them recorded (the same key: adapter, variant, case,
schema mode, transport), on what the report shows of a cell: its outcome, what the follow-up call
did, whether a returned result was altered and, for a framework, the channel the model read and
whether ``isError`` reached it. Cells only one run has are listed separately.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.classify.outcomes import cells_frame
from harness.run.store import RunStore

COMPARED = ("outcome", "followup", "altered", "model_channel", "model_error_seen")


@dataclass(frozen=True)
class RunDiff:
    """The cells two runs share and where they disagree."""

    shared: int
    differing: pd.DataFrame
    """One row per differing cell: ``key`` and ``<column>_a`` / ``<column>_b`` for each compared column."""
    only_a: list[str]
    only_b: list[str]


def _frame(run: RunStore) -> pd.DataFrame:
    return cells_frame(list(run.records()), run.read_meta()).set_index("key")


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The values as the report shows them: strings, ``-`` for a missing value."""
    return frame.astype(object).map(lambda value: "-" if pd.isna(value) else str(value))


def compare_runs(a: RunStore, b: RunStore, columns: tuple[str, ...] = COMPARED) -> RunDiff:
    """Compare runs ``a`` and ``b`` on ``columns`` over the cells both recorded."""
    return compare_frames(_frame(a), _frame(b), columns)


def compare_frames(left: pd.DataFrame, right: pd.DataFrame, columns: tuple[str, ...] = COMPARED) -> RunDiff:
    """Compare two runs' classified cells (indexed by the key they are matched on) on ``columns``."""
    shared = left.index.intersection(right.index)
    left_values, right_values = (_shown(frame.loc[shared, list(columns)]) for frame in (left, right))
    unequal = (left_values != right_values).any(axis=1)
    differing = left_values[unequal].add_suffix("_a").join(right_values[unequal].add_suffix("_b"))
    return RunDiff(
        shared=len(shared),
        differing=differing.reset_index().sort_values("key").reset_index(drop=True),
        only_a=sorted(left.index.difference(right.index)),
        only_b=sorted(right.index.difference(left.index)),
    )


def summary(diff: RunDiff, a: str, b: str, limit: int = 50) -> str:
    """A plain-text account of ``diff`` (runs named ``a`` and ``b``; at most ``limit`` cells listed)."""
    lines = [f"{diff.shared} cells in both runs; {len(diff.differing)} differ"]
    for row in diff.differing.head(limit).itertuples(index=False):
        values = row._asdict()
        changes = ", ".join(
            f"{column}: {values[f'{column}_a']} ({a}) != {values[f'{column}_b']} ({b})"
            for column in COMPARED
            if f"{column}_a" in values and values[f"{column}_a"] != values[f"{column}_b"]
        )
        lines.append(f"  {values['key']}: {changes}")
    if len(diff.differing) > limit:
        lines.append(f"  ... and {len(diff.differing) - limit} more")
    for name, keys in ((a, diff.only_a), (b, diff.only_b)):
        if keys:
            lines.append(f"{len(keys)} cells only in {name}")
    return "\n".join(lines)
