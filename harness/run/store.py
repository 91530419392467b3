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
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from harness.errors import NoSuchRun, UsageError
from harness.layout import CellFiles
from harness.records import CellRecord, RunMeta

LOG_KEEP = 64 * 1024
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
"""Run ids are directory names under ``results/``: letters, digits, ``.``, ``_``, ``-``."""
LATEST = "latest"
BOUNDARY_FILE = "boundary.json"
"""The boundary probe's summary in a run directory (``harness/probe/boundary.py``)."""


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is a plain directory name; :class:`UsageError` otherwise."""
    if not RUN_ID.match(run_id) or run_id == LATEST:
        raise UsageError(f"run id {run_id!r}: use letters, digits, '.', '_' and '-', starting with a letter or digit")
    return run_id


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

    @property
    def case_files_dir(self) -> Path:
        """The case files a run replays, as they were when it started (``harness/recorded/case_files.py``)."""
        return self.directory / "case-files"

    @property
    def boundary_path(self) -> Path:
        """The boundary probe's summary (``harness/probe/boundary.py``)."""
        return self.directory / BOUNDARY_FILE

    def cell_dir(self, key: str) -> Path:
        return self.directory / "cells" / key

    def cell_files(self, key: str) -> CellFiles:
        return CellFiles(self.cell_dir(key))

    def create(self) -> None:
        (self.directory / "cells").mkdir(parents=True, exist_ok=True)
        latest = self.directory.parent / LATEST
        latest.write_text(self.run_id + "\n")

    def records(self) -> Iterator[CellRecord]:
        """Every complete record; a torn last line (a killed run) is skipped."""
        if not self.records_path.exists():
            return
        with open(self.records_path, encoding="utf-8", errors="replace") as lines:  # a torn line may end mid-character
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and "key" in record:
                    yield cast(CellRecord, record)

    def compact(self) -> set[str]:
        """Rewrite ``cells.jsonl`` without torn lines or repeated keys; return the keys done."""
        seen: dict[str, CellRecord] = {}
        for record in self.records():
            seen.setdefault(record["key"], record)
        if self.records_path.exists():
            temporary = self.records_path.with_suffix(".jsonl.tmp")
            with open(temporary, "w", encoding="utf-8") as out:
                for record in seen.values():
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
            os.replace(temporary, self.records_path)
        return set(seen)

    def append(self, record: CellRecord) -> None:
        """Append one record durably."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with open(self.records_path, "a", encoding="utf-8") as out:
            out.write(line)
            out.flush()
            os.fsync(out.fileno())

    def write_meta(self, meta: RunMeta) -> None:
        temporary = self.meta_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
        os.replace(temporary, self.meta_path)

    def read_meta(self) -> RunMeta:
        try:
            return cast(RunMeta, json.loads(self.meta_path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise NoSuchRun(f"run {self.run_id!r}: {self.meta_path} cannot be read ({exc})") from exc


def _known_runs(results: Path) -> list[str]:
    if not results.is_dir():
        return []
    return sorted(entry.name for entry in results.iterdir() if RunStore(entry).meta_path.is_file())


def open_run(results: Path, run_id: str = LATEST) -> RunStore:
    """The run called ``run_id`` (``latest``: the newest); :class:`NoSuchRun` naming the known runs."""
    if run_id == LATEST:
        pointer = results / LATEST
        if not pointer.is_file():
            raise NoSuchRun(f"no run yet in {results} (start one with `nox -s matrix`)")
        run_id = pointer.read_text().strip()
    run = RunStore(results / check_run_id(run_id))
    if not run.meta_path.is_file():
        known = _known_runs(results)
        hint = f"runs: {', '.join(known[-5:])}" if known else "no runs yet"
        raise NoSuchRun(f"no such run {run_id!r} in {results} ({hint})")
    return run


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


def link_tree(source: Path, target: Path) -> None:
    """A copy of the directory ``source`` at ``target`` (replaced if it exists), its files hard-linked
    where the file system allows (a cell's evidence never changes once recorded), copied elsewhere."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, copy_function=link)
