"""Benchmark: the full matrix's wall time, cells per second, and the harness's per-cell overhead.

Measurements in one run, on the machine at hand; the last three, and ``--backends`` (the sample
cells on the docker backend against the local one), on request:

1. **Matrix**: ``python -m harness run`` over every cell (or the ``--adapter``/``--family``
   selection), timed end to end; cells per second. ``--from-run RUN_ID`` measures a finished,
   uninterrupted run instead (its metadata's start and finish times), e.g. the one ``nox`` made.
   Its CPU time (the harness and every process below it) over the cores is the run's floor: no
   schedule on this machine does the same work in less wall time (:class:`HarnessRun`).
2. **Per-cell overhead**: for every cell, the harness-measured wall time of the adapter process
   minus the adapter's own step time (initialize, list, calls, follow-up, close as the adapter
   timed them): process start, runtime and SDK imports, server spawn, shutdown and bookkeeping.
3. **Baseline**: sample cells (stdio) run sequentially twice, once as the bare adapter command
   (``subprocess.run``, nothing else) and once through ``runner.run_cell`` (process group, budget,
   straggler scan, validation, elision, journal parsing); the ratio is the harness's own cost.
4. **Isolation** (``--isolation``): the same cells run forked from warm workers (the default) and
   as one process per cell (``--isolation process``), back to back, each timed end to end with the
   harness process's peak resident memory; the two runs compared cell by cell (``harness.publish.diff``).
   Two selections: the SDK columns' schema family (every transport) and the Python framework
   columns' schema family (their default variants).
5. **Naive runner** (``--naive``): a sequential one-process-per-cell loop, the few lines anyone would
   write first (:func:`naive_run`), against the harness on the same stdio schema and size cells of
   the raw, Python SDK 2.x and 1.x and TypeScript SDK columns.
6. **Environments** (``--environments``): every adapter's local environment built from nothing
   into a scratch checkout with empty package caches, twice: the baseline as before (``venv`` +
   ``pip``, one adapter after another: ``MCPCM_INSTALLER=pip prepare --jobs 1``) and as now (``uv``,
   as many at once as cores); then the same build again (warm: nothing to do), and whether both builds
   installed the same distributions.

7. **Reuse** (``--reuse``): in a clean clone of the checkout's commit, the README's first command
   (``nox``: prepare, matrix, probe, conformance, report), then the same command again with
   nothing changed (how many cells and probe entries it reused, ``harness diff`` of the two runs);
   then ``nox -s matrix`` after a one-line change to one adapter's source, to one catalog case and
   under ``servers/reference/`` (each reverted after; the last only planned, every cell would run,
   as under ``--fresh``), and a ``--fresh`` run of the matrix compared with the reuse-everything
   one; and four shards of the matrix by cost and by count, each shard's summed wall time in the
   fresh run, the costs taken from the first.

8. **The JVM's share** (``--java COMMIT``): the Java and Kotlin SDK columns' stdio schema cells
   (every cell a fresh JVM), run here and in a clean clone of ``COMMIT`` (the JVM as it was there,
   its environments built first), one after the other, each run's CPU time less the harness's own,
   per cell; then every default cell of the two columns on each side, whose CPU time moves the
   default matrix's floor from the one side to the other (with ``--reuse``, the floor before is the
   ``--fresh`` run's CPU time less the columns' here plus theirs at ``COMMIT``, all in this run).

Prints a JSON summary, and writes it after every part to ``.artifacts/benchmark/<stamp>/summary.json``
(a part cut short leaves the parts before it); ``docs/benchmarks.md`` quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.layout import CellFiles, Layout  # noqa: E402
from harness.matrix import cells, manifest  # noqa: E402
from harness.prepare import environments  # noqa: E402
from harness.report import pages  # noqa: E402
from harness.run import reuse, runner, runs, shards, store  # noqa: E402
from harness.run.backends.local import LocalBackend  # noqa: E402
from harness.run.meta import cpu_count  # noqa: E402
from harness.system import process  # noqa: E402

SAMPLE_CASES = ("ok", "type-swap", "text-10mib")


def _steps_ms(observation: dict | None) -> float | None:
    if not observation:
        return None
    steps = [
        observation.get("initialize"),
        observation.get("list_tools"),
        observation.get("close"),
        observation.get("followup"),
        *(observation.get("calls") or []),
    ]
    return sum(float(step.get("duration_ms") or 0) for step in steps if step)


def _quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {
        "median": round(statistics.median(values), 1),
        "p90": round(values[int(0.9 * (len(values) - 1))], 1),
        "n": len(values),
    }


def matrix(layout: Layout, args: argparse.Namespace, run_id: str) -> dict:
    """Run the matrix and measure it, or (``--from-run``) measure a finished run from its metadata."""
    if args.from_run:
        run = store.RunStore(layout.results / args.from_run)
        meta = run.read_meta()
        if not meta.get("finished") or meta.get("resumed"):
            raise SystemExit(f"{run.directory}: not one uninterrupted, finished run")
        seconds = (datetime.fromisoformat(meta["finished"]) - datetime.fromisoformat(meta["started"])).total_seconds()
        args.jobs = meta["settings"]["jobs"]
        measured_here: dict[str, float] = {}  # the run was not made here: no CPU or memory figures
    else:
        selection = [arg for name in args.adapter for arg in ("--adapter", name)]
        selection += [arg for family in args.family for arg in ("--family", family)]
        measured = _harness_run(_run_command(run_id, args.jobs, *selection))
        seconds = measured.seconds
        measured_here = measured.figures(cpu_count())
        run = store.RunStore(layout.results / run_id)
    records = list(run.records())
    overhead: dict[str, list[float]] = {}
    for record in records:
        own = _steps_ms(record.get("observation"))
        wall = (record.get("process") or {}).get("wall_ms")
        if own is not None and wall is not None:
            overhead.setdefault(record["adapter"], []).append(wall - own)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as out:
        pages.render(run, Path(out) / "reports")
    report_s = time.monotonic() - started
    processes = Counter("killed at budget" if (r.get("process") or {}).get("timed_out") else "exited" for r in records)
    return {
        "run": run.run_id,
        "cells": len(records),
        "seconds": round(seconds, 1),
        "jobs": args.jobs,
        "processes": dict(processes),
        "cells_per_second": round(len(records) / seconds, 2),
        **measured_here,
        "overhead_ms_by_adapter": {name: _quantiles(values) for name, values in sorted(overhead.items())},
        "report_seconds": round(report_s, 2),
    }


def _scratch_checkout(target: Path) -> Path:
    """The checkout's tracked files (no environments, no node_modules) copied to ``target``."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


def _distributions(root: Path) -> dict[str, list[str]]:
    """Per Python environment under ``root/.envs``: its installed distributions (pip and setuptools aside)."""
    code = (
        "import importlib.metadata as m; print('\\n'.join(sorted(f'{d.metadata[\"Name\"].lower()}=={d.version}' "
        "for d in m.distributions() if d.metadata['Name'].lower() not in ('pip', 'setuptools'))))"
    )
    found = {}
    for python in sorted((root / ".envs").glob("*/bin/python")):
        listed = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout
        found[python.parent.parent.name] = listed.split()
    return found


def environment_builds(jobs: int) -> dict:
    """Cold builds of every environment: pip one by one (the baseline) against uv in parallel."""
    measured: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-envs-") as scratch:
        for mode, installer, mode_jobs in (("pip-sequential", "pip", 1), ("uv-parallel", "uv", jobs)):
            root = _scratch_checkout(Path(scratch) / mode)
            caches = Path(scratch) / f"{mode}-caches"
            env = {
                **os.environ,
                "MCPCM_INSTALLER": installer,
                "PIP_CACHE_DIR": str(caches / "pip"),
                "UV_CACHE_DIR": str(caches / "uv"),
                "npm_config_cache": str(caches / "npm"),
            }
            command = [sys.executable, "-m", "harness", "--root", str(root), "prepare", "--jobs", str(mode_jobs)]
            timings = []
            for _ in ("cold", "warm"):
                started = time.monotonic()
                subprocess.run(command, cwd=ROOT, env=env, check=True, stderr=subprocess.DEVNULL)
                timings.append(round(time.monotonic() - started, 1))
            measured[mode] = {
                "jobs": mode_jobs,
                "cold_seconds": timings[0],
                "warm_seconds": timings[1],
                "distributions": _distributions(root),
            }
    same = measured["pip-sequential"].pop("distributions") == measured["uv-parallel"].pop("distributions")
    measured["same_distributions"] = same
    measured["speedup_cold"] = round(
        measured["pip-sequential"]["cold_seconds"] / measured["uv-parallel"]["cold_seconds"], 2
    )
    return measured


def baseline(layout: Layout, args: argparse.Namespace, run_id: str) -> dict:
    adapters = [
        a for a in manifest.discover(layout.clients) if not a.broken and (not args.adapter or a.name in args.adapter)
    ]
    sample = cells.build(adapters, cells.Selection(cases=SAMPLE_CASES, transports=("stdio",)))
    sample = [cell for cell in sample if cell.schema in ("advertised", "none")]
    run = store.RunStore(layout.results / run_id)
    run.create()
    bare, harnessed = [], []
    backend = LocalBackend(layout, isolation="process")  # the bare side starts a process per cell too
    env = environments.process_env(layout)
    for _ in range(args.repeat):
        for cell in sample:
            with tempfile.TemporaryDirectory(prefix="bench-bare-") as scratch:
                files = CellFiles(Path(scratch))
                files.cell.write_text(json.dumps(cell.to_file(layout.server, files.journal, python=sys.executable)))
                started = time.monotonic()
                subprocess.run(
                    environments.command(layout, cell.adapter, files.cell, files.raw_observation),
                    cwd=cell.adapter.directory,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=cell.budget_s,
                )
                bare.append(time.monotonic() - started)
            started = time.monotonic()
            runner.run_cell(backend, run, cell)
            harnessed.append(time.monotonic() - started)
    backend.close()
    total_bare, total_harness = sum(bare), sum(harnessed)
    return {
        "sample_cells": len(sample),
        "repeat": args.repeat,
        "bare_seconds": round(total_bare, 2),
        "harness_seconds": round(total_harness, 2),
        "bare_ms_per_cell": round(1000 * total_bare / len(bare), 1),
        "harness_ms_per_cell": round(1000 * total_harness / len(harnessed), 1),
        "ratio": round(total_harness / total_bare, 3),
    }


def backends(layout: Layout, args: argparse.Namespace, stamp: str) -> dict:
    """The same sample cells (every transport) on the local and the docker backend, timed."""
    adapters = args.adapter or ["raw-jsonrpc", "python-mcp", "ts-sdk"]
    selection = [arg for name in adapters for arg in ("--adapter", name)]
    selection += [arg for case in SAMPLE_CASES for arg in ("--case", case)]
    subprocess.run(
        [sys.executable, "-m", "harness", "prepare", "--backend", "docker", *selection[: 2 * len(adapters)]],
        cwd=ROOT,
        check=True,
        stderr=subprocess.DEVNULL,
    )
    measured = {}
    for backend in ("local", "docker"):
        run_id = f"bench-{backend}-{stamp}"
        started = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "harness",
                "run",
                "--backend",
                backend,
                "--run-id",
                run_id,
                "--jobs",
                str(args.jobs),
                *selection,
            ],
            cwd=ROOT,
            check=True,
            stderr=subprocess.DEVNULL,
        )
        seconds = time.monotonic() - started
        cells_run = len(list(store.RunStore(layout.results / run_id).records()))
        measured[backend] = {
            "run": run_id,
            "cells": cells_run,
            "seconds": round(seconds, 1),
            "ms_per_cell": round(1000 * seconds / cells_run, 1),
        }
    measured["docker_over_local"] = round(measured["docker"]["seconds"] / measured["local"]["seconds"], 3)
    return measured


@dataclass(frozen=True)
class HarnessRun:
    """One ``python -m harness ...`` as :func:`_harness_run` measured it."""

    seconds: float
    """Wall time."""
    peak_mib: float
    """Peak resident memory of the harness process itself (``VmHWM``, read while it runs:
    ``/usr/bin/time -v`` would report the largest of the adapter processes it waited for)."""
    cpu_s: float
    """CPU time (user and system) of the harness and every process it and its descendants reaped:
    the clients, the reference servers, the warm workers and their forked cells."""
    harness_cpu_s: float
    """The harness process's own CPU time (as last read while it ran, at most 0.2 s stale)."""

    def figures(self, cores: int) -> dict[str, float]:
        """Its memory and CPU figures, among them ``floor_seconds`` (its CPU time over the cores: no
        schedule on this machine does the same work in less wall time) and ``cpu_share`` (of the
        cores' time over its wall time)."""
        return {
            "harness_peak_mib": self.peak_mib,
            "cpu_seconds": round(self.cpu_s, 1),
            "harness_cpu_seconds": round(self.harness_cpu_s, 1),
            "floor_seconds": round(self.cpu_s / cores, 1),
            "cpu_share": round(self.cpu_s / (self.seconds * cores), 3),
        }


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _harness_run(command: list[str]) -> HarnessRun:
    """Run ``python -m harness ...`` (nothing else running in this process) and measure it."""
    started, cpu_before = time.monotonic(), _cpu_of_children()
    child = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL)
    peak_kib, own_ticks = 0, 0
    while child.poll() is None:
        try:
            for line in Path(f"/proc/{child.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kib = max(peak_kib, int(line.split()[1]))
            stat = Path(f"/proc/{child.pid}/stat").read_bytes()
            own_ticks = sum(int(field) for field in process.stat_fields(stat)[11:13])
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    if child.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}")
    return HarnessRun(
        seconds=round(time.monotonic() - started, 1),
        peak_mib=round(peak_kib / 1024, 1),
        cpu_s=_cpu_of_children() - cpu_before,
        harness_cpu_s=own_ticks / process.CLOCK_TICKS,
    )


def _run_command(run_id: str, jobs: int, *selection: str) -> list[str]:
    """A harness run that runs every cell (``--fresh``: what is timed is the cells, not their reuse)."""
    return [sys.executable, "-m", "harness", "run", "--fresh", "--run-id", run_id, "--jobs", str(jobs), *selection]


def isolation_selections(layout: Layout) -> dict[str, list[str]]:
    """The benchmark's two selections: the SDK columns' schema family, and the Python framework
    columns' schema family (each framework's first variant, its default)."""
    frameworks = [
        adapter.column(adapter.variants[0])
        for adapter in manifest.discover(layout.clients)
        if not adapter.broken and adapter.kind == "framework" and adapter.runtime == "python"
    ]
    return {
        "sdk-schema": ["--kind", "sdk", "--family", "schema"],
        "python-frameworks-schema": [
            *(arg for column in frameworks for arg in ("--adapter", column)),
            "--family",
            "schema",
        ],
    }


def adapter_seconds(layout: Layout, worker_run: str, process_run: str) -> dict[str, dict[str, float]]:
    """Per adapter, its cells' adapter wall time summed in each run and the ratio: where the warm
    starts save and where they cannot (an HTTP cell's server start is outside these sums)."""
    sums: dict[str, dict[str, float]] = {}
    for mode, run_id in (("worker", worker_run), ("process", process_run)):
        for record in store.RunStore(layout.results / run_id).records():
            facts = record["process"]
            per = sums.setdefault(record["adapter"], {"worker": 0.0, "process": 0.0})
            per[mode] += facts["wall_ms"] / 1000 if facts else 0.0
    return {
        name: {
            "worker": round(per["worker"], 1),
            "process": round(per["process"], 1),
            "worker_over_process": round(per["worker"] / per["process"], 3) if per["process"] else 0.0,
        }
        for name, per in sorted(sums.items())
    }


def isolation(layout: Layout, args: argparse.Namespace, stamp: str) -> dict:
    """The same cells forked from warm workers and as one process per cell: times, memory, differences."""
    from harness.publish import diff

    measured: dict = {}
    for name, selection in isolation_selections(layout).items():
        if args.isolation_selection and name not in args.isolation_selection:
            continue
        entry: dict = {}
        for mode in ("worker", "process"):
            run_id = f"bench-{name}-{mode}-{stamp}"
            measured_run = _harness_run(_run_command(run_id, args.jobs, *selection, "--isolation", mode))
            cells_run = len(list(store.RunStore(layout.results / run_id).records()))
            entry[mode] = {
                "run": run_id,
                "cells": cells_run,
                "seconds": measured_run.seconds,
                **measured_run.figures(cpu_count()),
            }
        found = diff.compare_runs(*(store.RunStore(layout.results / entry[m]["run"]) for m in ("worker", "process")))
        entry["differing_cells"] = len(found.differing)
        entry["shared_cells"] = found.shared
        entry["worker_over_process"] = round(entry["worker"]["seconds"] / entry["process"]["seconds"], 3)
        entry["adapter_seconds"] = adapter_seconds(layout, entry["worker"]["run"], entry["process"]["run"])
        measured[name] = entry
    return measured


NAIVE_COLUMNS = ("raw-jsonrpc", "python-mcp", "python-mcp-v1", "ts-sdk/call-only", "ts-sdk/list-first")


def naive_run(layout: Layout, selected: list[cells.Cell], scratch: Path) -> float:
    """The baseline anyone would write first: for each cell, write its cell file, run the adapter
    as a fresh process with a timeout, one after another. Returns the seconds it took."""
    started = time.monotonic()
    for index, cell in enumerate(selected):
        directory = scratch / str(index)
        directory.mkdir()
        files = CellFiles(directory)
        files.cell.write_text(json.dumps(cell.to_file(layout.server, files.journal, python=sys.executable)))
        command = environments.command(layout, cell.adapter, files.cell, files.raw_observation)
        try:
            subprocess.run(
                command,
                cwd=cell.adapter.directory,
                env=environments.process_env(layout),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=cell.budget_s,
            )
        except subprocess.TimeoutExpired:
            pass
    return time.monotonic() - started


def naive(layout: Layout, args: argparse.Namespace, stamp: str) -> dict:
    """The harness against :func:`naive_run` on the same stdio schema and size cells."""
    selection = [arg for name in NAIVE_COLUMNS for arg in ("--adapter", name)]
    selection += ["--family", "schema", "--family", "size", "--transport", "stdio"]
    adapters = [a for a in manifest.discover(layout.clients) if a.name in {n.split("/")[0] for n in NAIVE_COLUMNS}]
    chosen = cells.Selection(adapters=NAIVE_COLUMNS, families=("schema", "size"), transports=("stdio",))
    selected = cells.build(adapters, chosen)
    with tempfile.TemporaryDirectory(prefix="bench-naive-") as scratch:
        naive_s = naive_run(layout, selected, Path(scratch))
    run_id = f"bench-naive-harness-{stamp}"
    harnessed = _harness_run(_run_command(run_id, args.jobs, *selection))
    return {
        "cells": len(selected),
        "naive_seconds": round(naive_s, 1),
        "harness_seconds": harnessed.seconds,
        "harness_run": run_id,
        "harness_over_naive": round(harnessed.seconds / naive_s, 3),
        **harnessed.figures(cpu_count()),
    }


README_INSTALL = "python3 -m venv .venv && .venv/bin/pip install -q nox==2026.10.20 uv==0.13.9"
"""The README's first command, up to ``nox`` itself."""
ADAPTER_EDIT = ("clients/python-mcp/adapter.py", "\n# one line more (the reuse benchmark)\n")
CASE_EDIT = (
    "harness/matrix/catalog.py",
    '"The correct answer, after a 2 s delay."',
    '"The correct answer, after a 2 s delay (edited)."',
)
SERVER_EDIT = ("servers/reference/cases.py", "\n# one line more (the reuse benchmark)\n")


def _timed_shell(command: str, cwd: Path, log: Path) -> dict:
    """Run a shell command in ``cwd``, its output to ``log``: its wall and CPU time, and the reuse
    lines and per-session times it printed."""
    started, cpu_before = time.monotonic(), _cpu_of_children()
    with open(log, "w") as out:
        done = subprocess.run(["bash", "-c", command], cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    text = log.read_text(errors="replace")
    finished = [line.split(" was successful in ", 1) for line in _lines(text, " was successful in ")]
    return {
        "command": command,
        "exit": done.returncode,
        "seconds": round(time.monotonic() - started, 1),
        "cpu_seconds": round(_cpu_of_children() - cpu_before, 1),
        "sessions": {name.removeprefix("nox > Session ").strip(): words.strip() for name, words in finished},
        "said": _lines(text, "reuse:", "cells ran in", "reused from", "conformance", "report:"),
    }


def _lines(text: str, *needles: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if any(needle in line for needle in needles)][:40]


def _latest(clone: Path) -> str:
    return (clone / "results" / "latest").read_text().strip()


def _ran(clone: Path, run_id: str) -> dict[str, int]:
    records = list(store.RunStore(clone / "results" / run_id).records())
    reused = sum(1 for record in records if record.get("reused_from"))
    return {"cells": len(records), "ran": len(records) - reused, "reused": reused}


def _edited(clone: Path, path: str, old: str, new: str | None = None) -> str:
    """Apply one edit (``new`` given: replace ``old``; else append ``old``); return the original text."""
    target = clone / path
    original = target.read_text()
    target.write_text(original.replace(old, new, 1) if new is not None else original + old)
    assert target.read_text() != original, f"{path}: the edit changed nothing"
    return original


PLAN = """
import json, sys
from pathlib import Path
from harness.run import backends, inputs, reuse, runs
from harness.layout import Layout
layout = Layout(Path.cwd())
planned = runs.plan(layout, runs.Request(), "planned")
backend = backends.create("local", layout)
digests = inputs.Digests(layout, "local", backend.inputs)
found = reuse.plan(layout.results, "planned", planned.cells, {c.key: digests.of(c) for c in planned.cells})
counts = {"cells": len(planned.cells), "reused": len(found.taken), "to_run": len(found.to_run)}
print(json.dumps({**counts, "why": found.why_run}))
"""
"""What ``run`` would reuse and run in the checkout at hand, planned by its own harness without running a cell."""


def _planned(clone: Path) -> dict:
    """What the default run would reuse and run in ``clone`` now (:data:`PLAN`)."""
    python = str(clone / ".nox" / "matrix" / "bin" / "python")
    done = subprocess.run([python, "-c", PLAN], cwd=clone, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _shard_loads(clone: Path, cost_run: str, measured_run: str, count: int = 4) -> dict:
    """Four shards of the measured run's cells, by the cost run's wall times and by count: each
    shard's summed wall time in the measured run, and the slowest over the mean."""
    records = store.RunStore(clone / "results" / measured_run).records()
    measured = {r["key"]: (r.get("process") or {}).get("wall_ms") or 0.0 for r in records}
    layout = Layout(clone)
    every = runs.plan(layout, runs.Request()).cells
    source = reuse.read_index(reuse.source(clone / "results" / cost_run))
    result = {}
    for name, chosen in (("by_cost", source), ("by_count", None)):
        parts = [shards.split(every, index, count, chosen) for index in range(1, count + 1)]
        loads = [sum(measured.get(cell.key, 0.0) for cell in part) / 1000 for part in parts]
        mean = sum(loads) / count
        result[name] = {"shard_seconds": [round(x, 1) for x in loads], "slowest_over_mean": round(max(loads) / mean, 3)}
    return result


def reuse_part(stamp: str, within: Path | None = None) -> dict:
    """The reuse measurements (module docstring, 7) in a clean clone of this commit; ``within``: in
    that clone, where they have run up to the server edit, the rest."""
    if within is not None:
        return _reuse_rest(within, ROOT / ".artifacts" / "benchmark" / stamp, {"clone": str(within)})
    clone = Path(tempfile.mkdtemp(prefix=f"mcpcm-reuse-{stamp}-"))
    git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    commit = git.stdout.strip()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
    logs = ROOT / ".artifacts" / "benchmark" / stamp
    logs.mkdir(parents=True, exist_ok=True)
    found: dict = {"clone": str(clone), "commit": commit, "logs": str(logs)}
    readme = f"{README_INSTALL} && .venv/bin/nox"
    found["first"] = _timed_shell(readme, clone, logs / "first.log")
    first = _latest(clone)
    found["first"]["cells"] = _ran(clone, first)
    found["second"] = _timed_shell(readme, clone, logs / "second.log")
    second = _latest(clone)
    found["second"]["cells"] = _ran(clone, second)
    entries = json.loads((clone / "results" / second / "boundary.json").read_text())
    found["second"]["probe"] = {"entries": len(entries), "reused": sum(1 for e in entries if e.get("reused_from"))}
    python = str(clone / ".nox" / "matrix" / "bin" / "python")
    diff = subprocess.run([python, "-m", "harness", "diff", first, second], cwd=clone, capture_output=True, text=True)
    found["second"]["diff"] = diff.stdout.strip().splitlines()[0]
    for name, edit in (("adapter_edit", ADAPTER_EDIT), ("case_edit", CASE_EDIT)):
        original = _edited(clone, *edit)
        try:
            found[name] = _timed_shell(".venv/bin/nox -s matrix", clone, logs / f"{name}.log")
            found[name]["cells"] = _ran(clone, _latest(clone))
        finally:
            (clone / edit[0]).write_text(original)
    return _reuse_rest(clone, logs, found)


def _runs_by_reuse(clone: Path) -> tuple[str, str]:
    """The clone's first run (every cell ran) and its reuse-everything run (every cell reused)."""
    finished = [earlier.run for earlier in reuse.sources(clone / "results", "") if earlier.finished]
    counts = {run.run_id: _ran(clone, run.run_id) for run in finished}
    first = min(run_id for run_id, c in counts.items() if c["reused"] == 0 and c["cells"])
    second = min(run_id for run_id, c in counts.items() if c["ran"] == 0 and c["cells"])
    return first, second


def _reuse_rest(clone: Path, logs: Path, found: dict) -> dict:
    """From the server edit on (module docstring, 7)."""
    logs.mkdir(parents=True, exist_ok=True)
    first, second = _runs_by_reuse(clone)
    found.update({"first_run": first, "second_run": second})
    original = _edited(clone, *SERVER_EDIT)
    try:
        found["server_edit"] = {"planned": _planned(clone)}
    finally:
        (clone / SERVER_EDIT[0]).write_text(original)
    found["unedited"] = {"planned": _planned(clone)}
    found["fresh"] = _timed_shell(".venv/bin/nox -s matrix -- --fresh", clone, logs / "fresh.log")
    fresh = _latest(clone)
    found["fresh"]["cells"] = _ran(clone, fresh)
    python = str(clone / ".nox" / "matrix" / "bin" / "python")
    diff = subprocess.run([python, "-m", "harness", "diff", second, fresh], cwd=clone, capture_output=True, text=True)
    found["fresh"]["diff_with_second"] = diff.stdout.strip().splitlines()
    found["shards"] = _shard_loads(clone, first, fresh)
    return found


JVM_SELECTION = ("--family", "schema", "--transport", "stdio", "--protocol", "2025-11-25")
JVM_ADAPTERS = ("java-sdk", "kotlin-sdk")


def _jvm_cells(root: Path, run_id: str, jobs: int, *selection: str) -> dict:
    """The ``selection``'s cells run in the checkout ``root``: their CPU time, the harness's own left
    out, in all and per cell, and the runtimes the observations name."""
    command = [str(root / ".nox" / "matrix" / "bin" / "python"), "-m", "harness", "--root", str(root)]
    command += ["run", "--fresh", "--run-id", run_id, "--jobs", str(jobs), *selection]
    measured = _harness_run(command)
    records = list(store.RunStore(root / "results" / run_id).records())
    cpu_s = measured.cpu_s - measured.harness_cpu_s
    runtimes = Counter(str((r.get("observation") or {}).get("runtime_version")) for r in records)
    return {
        "cells": len(records),
        "seconds": measured.seconds,
        "cpu_seconds": round(cpu_s, 1),
        "cpu_seconds_per_cell": round(cpu_s / max(1, len(records)), 3),
        "runtime_versions": dict(runtimes),
    }


def jvm_part(before: str, jobs: int, stamp: str, summary: dict) -> dict:
    """The Java and Kotlin SDK columns' stdio schema cells at ``before`` and here, then every default
    cell of the two columns on each side (module docstring, 8); ``summary`` gets what is found as it
    is found."""
    clone = Path(tempfile.mkdtemp(prefix=f"mcpcm-jvm-{stamp}-"))
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", before], cwd=clone, check=True)
    adapters = [arg for name in JVM_ADAPTERS for arg in ("--adapter", name)]
    for root in (clone, ROOT):  # the environments (a run prepares its own), and the venv that runs the cells
        nox = [str(ROOT / ".venv" / "bin" / "nox"), "-f", str(root / "noxfile.py"), "-s", "matrix"]
        subprocess.run(
            [*nox, "--", *adapters, "--case", "ok", "--run-id", f"jvm-{stamp}-warm-up"], cwd=root, check=True
        )
    found: dict = {"before": before, "clone": str(clone)}
    summary["jvm"] = found
    for adapter in JVM_ADAPTERS:
        found[adapter] = {
            "before": _jvm_cells(clone, f"jvm-{stamp}-{adapter}-before", jobs, "--adapter", adapter, *JVM_SELECTION),
            "after": _jvm_cells(ROOT, f"jvm-{stamp}-{adapter}-after", jobs, "--adapter", adapter, *JVM_SELECTION),
        }
        _save(summary, stamp)
    found["columns"] = {"before": _jvm_cells(clone, f"jvm-{stamp}-columns-before", jobs, *adapters)}
    _save(summary, stamp)
    found["columns"]["after"] = _jvm_cells(ROOT, f"jvm-{stamp}-columns-after", jobs, *adapters)
    return found


def _floor_before(summary: dict) -> dict | None:
    """With ``--reuse`` and ``--java``: the default matrix's CPU time here (the ``--fresh`` run's)
    and at the ``--java`` commit (less the JVM columns' CPU time here, plus theirs there), over the cores."""
    fresh, columns = summary.get("reuse", {}).get("fresh"), summary.get("jvm", {}).get("columns", {})
    if not fresh or "after" not in columns:
        return None
    after = fresh["cpu_seconds"]
    before = after - columns["after"]["cpu_seconds"] + columns["before"]["cpu_seconds"]
    cores = summary["machine"]["cpus"]
    return {
        "cpu_seconds": {"before": round(before, 1), "after": after},
        "floor_seconds": {"before": round(before / cores, 1), "after": round(after / cores, 1)},
    }


def _save(summary: dict, stamp: str) -> None:
    """The summary so far, to ``.artifacts/benchmark/<stamp>/summary.json`` (whole or not at all)."""
    target = ROOT / ".artifacts" / "benchmark" / stamp / "summary.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_text(json.dumps(summary, indent=2))
    partial.replace(target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", action="append", default=[])
    parser.add_argument("--family", action="append", default=[])
    parser.add_argument(
        "--jobs", type=int, default=runs.default_jobs(), help="cells at once in its runs (default: run's)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="baseline repetitions")
    parser.add_argument("--skip-matrix", action="store_true", help="no full matrix run")
    parser.add_argument("--skip-baseline", action="store_true", help="no bare-command baseline")
    parser.add_argument(
        "--backends",
        action="store_true",
        help="also time the sample cells on the local and the docker backend (needs Docker and images)",
    )
    parser.add_argument(
        "--isolation",
        action="store_true",
        help="also time the same cells forked from warm workers and as one process per cell",
    )
    parser.add_argument(
        "--isolation-selection",
        action="append",
        default=[],
        choices=("sdk-schema", "python-frameworks-schema"),
        help="with --isolation: only this selection (repeatable; default both)",
    )
    parser.add_argument("--naive", action="store_true", help="also time a naive sequential one-process-per-cell runner")
    parser.add_argument(
        "--environments",
        action="store_true",
        help="also time cold builds of every local environment: pip one by one vs uv in parallel",
    )
    parser.add_argument(
        "--java",
        default=None,
        metavar="COMMIT",
        help="also the Java and Kotlin SDK columns' stdio schema cells here and at COMMIT: CPU time per cell",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="also, in a clean clone: the README's command twice, one-line changes, a --fresh run, shards by cost",
    )
    parser.add_argument(
        "--reuse-in",
        type=Path,
        default=None,
        metavar="CLONE",
        help="with --reuse: continue in this clone of an earlier --reuse from the server edit on",
    )
    parser.add_argument(
        "--from-run",
        default=None,
        metavar="RUN_ID",
        help="measure this finished run (e.g. the one `nox` just made) instead of running the matrix",
    )
    args = parser.parse_args()
    layout = Layout(ROOT)
    for adapter in manifest.discover(layout.clients):
        if not adapter.broken and (not args.adapter or adapter.name in args.adapter):
            environments.prepare(layout, adapter)
    stamp = store.new_run_id()
    summary = {
        "machine": {
            "cpus": cpu_count(),
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
    }
    parts = {
        "baseline": (not args.skip_baseline, lambda: baseline(layout, args, f"bench-baseline-{stamp}")),
        "environments": (args.environments, lambda: environment_builds(cpu_count())),  # prepare's own default
        "backends": (args.backends, lambda: backends(layout, args, stamp)),
        "isolation": (args.isolation, lambda: isolation(layout, args, stamp)),
        "naive": (args.naive, lambda: naive(layout, args, stamp)),
        "reuse": (args.reuse, lambda: reuse_part(stamp, args.reuse_in)),
        "jvm": (bool(args.java), lambda: jvm_part(args.java, args.jobs, stamp, summary)),
        "matrix": (not args.skip_matrix, lambda: matrix(layout, args, f"bench-{stamp}")),
    }
    for name, (wanted, measure) in parts.items():
        if wanted:
            summary[name] = measure()
            _save(summary, stamp)
    floor = _floor_before(summary)
    if floor:
        summary["floor_before_after"] = floor
        _save(summary, stamp)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
