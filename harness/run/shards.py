"""Shards by cost: ``run --shard K/N`` gives each of N jobs cells that take about as long in all.

The cost of a cell is its wall time in one earlier finished run (the newest whole run, not a
shard, whose index has wall times, :mod:`harness.run.reuse`); a cell that run does not have costs the
mean of its adapter's cells there (or of all its cells). The cells are dealt longest first, each
to the shard with the least time so far (ties: the lower shard, cells by key), so the split is the
same on every machine that has the same run, and a resumed shard recomputes it from the run its
settings name (``shard_costs``; ``merge`` refuses shards split by different runs). Without any
such run the split is by count, every N-th cell, as before costs were known.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from harness.errors import UsageError
from harness.matrix.cells import Cell, by_count

from .reuse import Damaged, Index, Source, read_index, source, sources

COUNT = "count"
"""``settings.shard_costs`` of a split by count."""


def _whole(earlier: Source) -> bool:
    """Whether the run is a whole matrix rather than one shard of one (a merged run is whole)."""
    settings = (earlier.meta or {}).get("settings")
    return isinstance(settings, dict) and list(settings.get("shard") or ()) == [1, 1]


def cost_source(results: Path, run_id: str) -> Index | None:
    """The newest finished whole run (not a shard: the shards of one matrix, run one after another,
    must split by the same times) other than ``run_id`` whose index has wall times, or None."""
    for earlier in sources(results, run_id):
        if not _whole(earlier):
            continue
        try:
            index = read_index(earlier)
        except Damaged:
            continue
        if index.wall_ms:
            return index
    return None


def named_source(results: Path, name: str) -> Index | None:
    """The cost source a run's settings name (``count``: none); :class:`UsageError` when it is gone."""
    if name == COUNT:
        return None
    try:
        return read_index(source(results / name))
    except Damaged as exc:
        raise UsageError(f"--shard split by the wall times of run {name!r}, which cannot be read now: {exc}") from exc


def costs(cells: list[Cell], source: Index) -> dict[str, float]:
    """Each cell's cost in milliseconds: its wall time in ``source``, else its adapter's mean there,
    else the mean of every cell there."""
    known = source.wall_ms
    by_adapter: dict[str, list[float]] = defaultdict(list)
    for key, wall in known.items():
        by_adapter[key.split("--", 1)[0]].append(wall)
    overall = sum(known.values()) / len(known)
    means = {name: sum(walls) / len(walls) for name, walls in by_adapter.items()}
    return {cell.key: known.get(cell.key, means.get(cell.adapter.name, overall)) for cell in cells}


def split(cells: list[Cell], index: int, count: int, source: Index | None) -> list[Cell]:
    """Shard ``index`` of ``count`` (1-based) of ``cells``, in their order: by cost where ``source``
    gives costs, else every ``count``-th cell."""
    if count == 1 or source is None:
        return by_count(cells, index, count)
    cost = costs(cells, source)
    loads = [0.0] * count
    mine: set[str] = set()
    for key in sorted(cost, key=lambda key: (-cost[key], key)):
        shard = min(range(count), key=lambda shard: (loads[shard], shard))
        loads[shard] += cost[key]
        if shard == index - 1:
            mine.add(key)
    return [cell for cell in cells if cell.key in mine]
