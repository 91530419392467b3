"""The results directory of one run: ``results/<run-id>/``.

```
results/<run-id>/
  meta.json               run metadata (meta.py)
  cells.jsonl             one record per finished cell, appended as cells finish
  cells/<cell-key>/       cell.json, observation.json, journal.jsonl, stdout.txt, stderr.txt
results/latest            the id of the newest run
```

``cells.jsonl`` is the source of truth: a record is appended (and flushed to disk) only once its
cell has finished, so a killed run loses at most the cells in flight, and ``--resume`` runs
exactly the cells that have no record. A torn last line is dropped on resume.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

LOG_KEEP = 64 * 1024


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


@dataclass(frozen=True)
class RunStore:
    """Reads and writes one run's directory."""

    directory: Path

    @property
    def run_id(self) -> str:
        return self.directory.name

    @property
    def records_path(self) -> Path:
        return self.directory / "cells.jsonl"

    @property
    def meta_path(self) -> Path:
        return self.directory / "meta.json"

    def cell_dir(self, key: str) -> Path:
        return self.directory / "cells" / key

    def create(self) -> None:
        (self.directory / "cells").mkdir(parents=True, exist_ok=True)
        latest = self.directory.parent / "latest"
        latest.write_text(self.run_id + "\n")

    def records(self) -> Iterator[dict[str, Any]]:
        """Every complete record; a torn last line (a killed run) is skipped."""
        if not self.records_path.exists():
            return
        with open(self.records_path, encoding="utf-8") as lines:
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and "key" in record:
                    yield record

    def compact(self) -> set[str]:
        """Rewrite ``cells.jsonl`` without torn lines or repeated keys; return the keys done."""
        seen: dict[str, dict[str, Any]] = {}
        for record in self.records():
            seen.setdefault(record["key"], record)
        if self.records_path.exists():
            temporary = self.records_path.with_suffix(".jsonl.tmp")
            with open(temporary, "w", encoding="utf-8") as out:
                for record in seen.values():
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
            os.replace(temporary, self.records_path)
        return set(seen)

    def append(self, record: dict[str, Any]) -> None:
        """Append one record durably."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with open(self.records_path, "a", encoding="utf-8") as out:
            out.write(line)
            out.flush()
            os.fsync(out.fileno())

    def write_meta(self, meta: dict[str, Any]) -> None:
        temporary = self.meta_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
        os.replace(temporary, self.meta_path)

    def read_meta(self) -> dict[str, Any]:
        return json.loads(self.meta_path.read_text())


def latest_run(results: Path) -> RunStore:
    """The newest run recorded in ``results/latest``."""
    pointer = results / "latest"
    if not pointer.exists():
        raise FileNotFoundError(f"{pointer}: no run yet (run `nox -s matrix` first)")
    return RunStore(results / pointer.read_text().strip())


def trim_log(path: Path, keep: int = LOG_KEEP) -> int:
    """Keep the head and tail of a captured log; return its original size in bytes."""
    size = path.stat().st_size
    if size <= 2 * keep:
        return size
    with open(path, "rb") as log:
        head = log.read(keep)
        log.seek(size - keep)
        tail = log.read()
    marker = f"\n[... {size - 2 * keep} bytes elided by the harness ...]\n".encode()
    path.write_bytes(head + marker + tail)
    return size
