"""The "behaviour changed in" page of a version sweep (``reports/versions.html``).

A run with columns of one adapter at several versions of its package (``run --with
ts-sdk@1.29.0,1.30.0 --adapter ts-sdk``: :mod:`harness.matrix.versions`) is a sweep. For every variant of
such an adapter, the versions are put in order, and for every cell (case, schema mode, transport,
revision) the page lists each version at which its outcome differs from the version before, with
both outcomes (``1.24.0: pass → disconnect``), each linked to the cell's evidence page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.records import RunMeta

PAGE = "versions.html"


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """An order for release versions: numbers by value, a pre-release (``1.2.0-rc.1``) before the release."""
    parts = re.split(r"[.+-]", version)
    return (*((0, int(part)) if part.isdigit() else (-1, part) for part in parts), (0, 0))


@dataclass(frozen=True)
class Change:
    version: str
    before: str
    after: str
    href: str


@dataclass(frozen=True)
class Family:
    """One variant of one adapter across the sweep's versions."""

    adapter: str
    variant: str
    package: str | None
    versions: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    """Per cell whose outcome changed along the versions: ``case``, ``schema``, ``transport``,
    ``protocol``, ``outcomes`` (one per version, in order) and ``changes`` (:class:`Change`)."""


def families(frame: pd.DataFrame, meta: RunMeta) -> list[Family]:
    """The sweep's families (an adapter variant seen at two versions or more); empty for another run."""
    adapters = meta.get("adapters", {})
    frame = frame.assign(
        base=frame["adapter"].map(lambda name: str(name).split("@")[0]),
        version=frame["adapter"].map(lambda name: adapters.get(str(name), {}).get("package_version") or "?"),
    )
    found = []
    for (base, variant), cells in frame.groupby(["base", "variant"]):
        versions = sorted(set(cells["version"]), key=version_key)
        if len(versions) < 2 or not any("@" in str(name) for name in cells["adapter"]):
            continue
        rows = []
        for (case, schema, transport, protocol), row in cells.groupby(["case", "schema", "transport", "protocol"]):
            by_version = {
                str(v): (str(o), str(k)) for v, o, k in zip(row["version"], row["outcome"], row["key"], strict=True)
            }
            changes = []
            previous = None
            for version in versions:
                if version not in by_version:
                    continue
                outcome, key = by_version[version]
                if previous is not None and outcome != previous:
                    changes.append(Change(version, previous, outcome, f"cells/{key}.html"))
                previous = outcome
            if changes:
                rows.append(
                    {
                        "case": case, "schema": schema, "transport": transport, "protocol": protocol,
                        "outcomes": [by_version.get(v, ("-", ""))[0] for v in versions], "changes": changes,
                    }
                )  # fmt: skip
        package = next((adapters[str(n)].get("package") for n in cells["adapter"] if str(n) in adapters), None)
        found.append(Family(str(base), str(variant), package, tuple(versions), tuple(rows)))
    return found
