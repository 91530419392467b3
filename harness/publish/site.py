"""``python -m harness publish --out DIR``: a static site of the runs in ``results/``, with history.

```
DIR/
  index.html             the runs, newest first: date, harness commit, backend, every client's
                         version, outcome counts; each linked to its report and to its changes
  index.json             the same, machine-readable (SITE_FORMAT)
  runs/<run-id>/         each run's report, as ``python -m harness report`` renders it
  latest/                the newest run's report (a copy: not every static host follows links)
  changes/<a>..<b>.html  what changed from each run to the next (harness/publish/changes.py)
  badges/<column>.json   the newest run's outcomes per column, a Shields endpoint badge
  assets/                the style sheet
```

The runs published are the finished ones (an interrupted run is left out until it is resumed),
without the shards a merged run was made of (``merge``), ordered by when they started; ``--keep N``
keeps the newest N. Every page links relatively and loads nothing from the network, so the site
works from ``file://`` and from any static host. It is rendered into a staging directory beside
``DIR`` and swapped in whole: a failed publish leaves ``DIR`` as it was.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.classify.outcomes import OUTCOMES, cells_frame
from harness.errors import UsageError
from harness.records import RunMeta
from harness.report import pages
from harness.run.store import RunStore

from . import changes

SITE_FORMAT = 1
"""The version of ``index.json``'s layout."""
BADGE_COLOR = "informational"
"""Badges count outcomes; they do not judge a client (an error-result may be the right answer)."""


@dataclass(frozen=True)
class PublishedRun:
    """A run as the site lists it."""

    run: RunStore
    meta: RunMeta
    frame: pd.DataFrame
    """Its classified cells (``cells_frame``), read once for the index and the changes."""
    counts: dict[str, int]
    columns: dict[str, dict[str, int]]
    """Per column, its cells by outcome."""

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def entry(self, predecessor: str | None, changes_href: str | None) -> dict[str, Any]:
        """The run's entry of ``index.json`` (and the row of ``index.html``)."""
        adapters = self.meta.get("adapters", {})
        return {
            "run_id": self.run_id,
            "started": self.meta.get("started"),
            "finished": self.meta.get("finished"),
            "harness_commit": self.meta.get("harness_commit"),
            "backend": self.meta.get("backend"),
            "clients": {
                name: {
                    "package": info.get("package"),
                    "version": info.get("package_version"),
                    "runtime": info.get("runtime"),
                    "runtime_version": info.get("runtime_version"),
                }
                for name, info in sorted(adapters.items())
            },
            "cells": sum(self.counts.values()),
            "reused": int(self.frame["reused_from"].notna().sum()),
            "reused_from": sorted(str(run) for run in self.frame["reused_from"].dropna().unique()),
            "outcomes": self.counts,
            "columns": self.columns,
            "merged_from": self.meta.get("merged_from"),
            "report": f"runs/{self.run_id}/index.html",
            "predecessor": predecessor,
            "changes": changes_href,
        }


def publishable(results: Path) -> list[PublishedRun]:
    """The finished runs of ``results`` that are not shards of a merged one, oldest first."""
    found = []
    for directory in sorted(results.iterdir()) if results.is_dir() else []:
        run = RunStore(directory)
        if directory.name.startswith(".") or not run.meta_path.is_file() or not run.records_path.is_file():
            continue
        meta = run.read_meta()
        if not meta.get("finished"):
            continue
        found.append((run, meta))
    merged = {run_id for _, meta in found for run_id in meta.get("merged_from") or []}
    published = []
    for run, meta in sorted(found, key=lambda pair: (pair[1].get("started") or "", pair[0].run_id)):
        if run.run_id in merged:
            continue
        frame = cells_frame(list(run.records()), meta)
        if frame.empty:
            continue
        by_column = frame.groupby("client")["outcome"].value_counts()
        columns: dict[str, dict[str, int]] = {}
        for (column, outcome), count in by_column.items():
            columns.setdefault(str(column), {})[str(outcome)] = int(count)
        counts = Counter({str(k): int(v) for k, v in frame["outcome"].value_counts().items()})
        published.append(PublishedRun(run, meta, frame, {o: counts[o] for o in OUTCOMES if counts[o]}, columns))
    return published


def badge(column: str, outcomes: dict[str, int]) -> dict[str, Any]:
    """A Shields endpoint badge (https://shields.io/badges/endpoint-badge) of one column's outcomes."""
    total = sum(outcomes.values())
    return {
        "schemaVersion": 1,
        "label": column,
        "message": f"{outcomes.get('pass', 0)}/{total} pass",
        "color": BADGE_COLOR,
    }


def badge_name(column: str) -> str:
    """The badge's file name: the column with ``/`` as ``--`` (``ts-sdk/call-only`` -> ``ts-sdk--call-only``)."""
    return column.replace("/", "--") + ".json"


def publish(results: Path, out: Path, keep: int | None, conformance: dict[str, Any] | None) -> list[PublishedRun]:
    """Render the site of the runs in ``results`` into ``out``; the runs published, oldest first."""
    runs = publishable(results)
    if keep is not None:
        runs = runs[-keep:]
    if not runs:
        raise UsageError(f"publish: no finished run in {results} (`python -m harness run` makes one)")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.staging"
    if staging.exists():
        shutil.rmtree(staging)
    try:
        _render(runs, staging, conformance)
        _swap(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return runs


def _render(runs: list[PublishedRun], staging: Path, conformance: dict[str, Any] | None) -> None:
    (staging / "runs").mkdir(parents=True)
    (staging / "changes").mkdir()
    (staging / "badges").mkdir()
    (staging / "assets").mkdir()
    shutil.copy(pages.TEMPLATES / "style.css", staging / "assets" / "style.css")
    env = pages.environment()
    frames = {published.run_id: published.frame for published in runs}
    entries = []
    for position, published in enumerate(runs):
        pages.render(published.run, staging / "runs" / published.run_id, conformance)
        predecessor = runs[position - 1] if position > 0 else None
        href = None
        if predecessor is not None:
            found = changes.between(predecessor.run, published.run, frames)
            if found.shared:
                href = f"changes/{predecessor.run_id}..{published.run_id}.html"
                page = env.get_template("changes.html.j2").render(changes=found, root="../")
                (staging / href).write_text(page, encoding="utf-8")
        entries.append(published.entry(predecessor.run_id if predecessor else None, href))
    newest = runs[-1]
    shutil.copytree(staging / "runs" / newest.run_id, staging / "latest")
    for column, outcomes in sorted(newest.columns.items()):
        (staging / "badges" / badge_name(column)).write_text(json.dumps(badge(column, outcomes)) + "\n")
    listed = list(reversed(entries))
    site_index = {"format": SITE_FORMAT, "latest": newest.run_id, "runs": listed}
    (staging / "index.json").write_text(json.dumps(site_index, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    page = env.get_template("site.html.j2").render(runs=listed, outcomes=OUTCOMES, latest=newest.run_id, root="")
    (staging / "index.html").write_text(page, encoding="utf-8")


def _swap(staging: Path, out: Path) -> None:
    """Put the staged site in place of ``out`` whole (the old one removed only once it is)."""
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        os.rename(out, old)
    try:
        os.rename(staging, out)
    except BaseException:
        if old.exists():
            os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)
