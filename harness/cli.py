"""Command line: ``python -m harness prepare | run | probe | report | list | catalog | base-image``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import backends, boundary, catalog, catalog_doc, cells, diff, images, manifest, meta, report, runner, store
from .classify import cells_frame
from .environments import Layout, PrepareError
from .progress import Progress

ROOT = Path(__file__).resolve().parent.parent


def _shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected INDEX/COUNT, e.g. 2/8") from None
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected 1 <= INDEX <= COUNT")
    return index, count


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    sub = parser.add_subparsers(dest="command", required=True)

    def kind(command: argparse.ArgumentParser) -> None:
        command.add_argument("--kind", choices=manifest.KINDS, default=os.environ.get("MCPCM_KIND") or None,
                             help="only adapters of this kind: sdk or framework (env MCPCM_KIND; default both)")

    def selection(command: argparse.ArgumentParser) -> None:
        kind(command)
        command.add_argument("--adapter", action="append", default=[],
                             help="adapter or column (adapter/variant); repeatable")
        command.add_argument("--case", action="append", default=[], help="case id; repeatable")
        command.add_argument("--family", action="append", default=[], choices=catalog.FAMILIES)
        command.add_argument("--transport", action="append", default=[], choices=manifest.TRANSPORTS)

    def backend(command: argparse.ArgumentParser, *, build: bool = False) -> None:
        command.add_argument("--backend", choices=backends.NAMES, default=None,
                             help="where adapters run: local processes (default) or docker containers")
        if build:
            command.add_argument("--base-image", default=os.environ.get("MCPCM_BASE_IMAGE", images.DEFAULT_BASE_IMAGE),
                                 help="docker: the image adapter images are built on (env MCPCM_BASE_IMAGE; "
                                      f"default {images.DEFAULT_BASE_IMAGE})")
            command.add_argument("--ca-bundle", type=Path, default=os.environ.get("MCPCM_CA_BUNDLE") or None,
                                 help="docker: a PEM bundle added to the images' trust store for pip and npm "
                                      "(env MCPCM_CA_BUNDLE)")

    prepare = sub.add_parser("prepare", help="build the adapters' environments or docker images (cached)")
    prepare.add_argument("--adapter", action="append", default=[])
    kind(prepare)
    backend(prepare, build=True)
    base = sub.add_parser("base-image", help="docker: bootstrap a Debian base image with debootstrap (no registry)")
    base.add_argument("--tag", default=images.BOOTSTRAP_TAG)
    base.add_argument("--suite", default="bookworm")
    base.add_argument("--mirror", default="http://deb.debian.org/debian")
    run = sub.add_parser("run", help="run the matrix into results/<run-id>/")
    selection(run)
    backend(run)
    run.add_argument("--jobs", type=int, default=meta.cpu_count())
    run.add_argument("--shard", type=_shard, default=(1, 1), help="run shard INDEX of COUNT, e.g. 2/8")
    run.add_argument("--budget-scale", type=float, default=1.0,
                     help="multiply every cell's time budget (default 1.0)")
    run.add_argument("--run-id", default=None, help="name of the run directory (default: UTC time)")
    run.add_argument("--resume", nargs="?", const="latest", default=None, metavar="RUN_ID",
                     help="finish an interrupted run (default: the latest) with its original selection")
    probe = sub.add_parser("probe", help="bisect the largest frame each column accepts, into a run")
    probe.add_argument("--adapter", action="append", default=[], help="adapter; repeatable")
    probe.add_argument("--kind", action="append", default=[], choices=boundary.KINDS)
    probe.add_argument("--run", default="latest", help="the run to add boundary.json to (default: the latest)")
    probe.add_argument("--max-bytes", type=int, default=boundary.DEFAULT_MAX_BYTES,
                       help="the largest frame tried; accepted means 'no limit up to' it (default 64 MiB)")
    probe.add_argument("--jobs", type=int, default=meta.cpu_count())
    backend(probe)
    rep = sub.add_parser("report", help="render reports/ from a run")
    rep.add_argument("--run", default="latest", help="run id (default: the latest)")
    rep.add_argument("--out", type=Path, default=None, help="output directory (default: reports/)")
    compare = sub.add_parser("diff", help="compare two runs cell by cell; exit 1 when a shared cell differs")
    compare.add_argument("run_a", help="run id")
    compare.add_argument("run_b", help="run id")
    compare.add_argument("--require-same-cells", action="store_true",
                         help="also fail when a cell is recorded by only one of the runs")
    sub.add_parser("catalog", help="print the fault catalog as Markdown (docs/fault-catalog.md)")
    listing = sub.add_parser("list", help="show adapters, columns and the cell count")
    selection(listing)
    return parser


def _adapters(layout: Layout, names: list[str], kind: str | None = None) -> list[manifest.Adapter]:
    found = [adapter for adapter in manifest.discover(layout.clients) if kind is None or adapter.kind == kind]
    if names:
        wanted = {name.split("/")[0] for name in names}
        unknown = wanted - {a.name for a in found}
        if unknown:
            raise ValueError(f"unknown adapter(s) {', '.join(sorted(unknown))}; known: {', '.join(a.name for a in found)}")
        found = [a for a in found if a.name in wanted]
    return found


def _backend(layout: Layout, args: argparse.Namespace, default: str = "local") -> backends.Backend:
    name = args.backend or default
    if name == "docker" and hasattr(args, "base_image"):
        return backends.create(name, layout, base_image=args.base_image, ca_bundle=args.ca_bundle)
    return backends.create(name, layout)


def _ready(backend: backends.Backend, adapters: list[manifest.Adapter], *, build: bool) -> dict[str, str]:
    """Build (``build``) or check each adapter's environment; returns the broken ones (name -> why)."""
    broken: dict[str, str] = {}
    for adapter in adapters:
        try:
            if build:
                built = backend.prepare(adapter)
                print(f"prepare {adapter.name}: {'built' if built else 'cached'}", file=sys.stderr)
            else:
                backend.check(adapter)
        except (PrepareError, OSError) as exc:
            broken[adapter.name] = str(exc)
            print(f"prepare {adapter.name}: FAILED: {exc}", file=sys.stderr)
    return broken


def _run_ready(backend: backends.Backend, adapters: list[manifest.Adapter]) -> dict[str, str]:
    """Before a run: local environments are built on demand, docker images must have been built."""
    return _ready(backend, adapters, build=backend.name == "local")


def cmd_prepare(layout: Layout, args: argparse.Namespace) -> int:
    backend = _backend(layout, args)
    try:
        broken = _ready(backend, _adapters(layout, args.adapter, args.kind), build=True)
    finally:
        backend.close()
    return 1 if broken else 0


def cmd_base_image(layout: Layout, args: argparse.Namespace) -> int:
    image_id = images.bootstrap_base(args.tag, suite=args.suite, mirror=args.mirror)
    print(f"base image {args.tag}: {image_id}", file=sys.stderr)
    return 0


def _selection(args: argparse.Namespace) -> cells.Selection:
    return cells.Selection(tuple(args.adapter), tuple(args.case), tuple(args.family), getattr(args, "shard", (1, 1)),
                           tuple(args.transport))


def cmd_list(layout: Layout, args: argparse.Namespace) -> int:
    adapters = _adapters(layout, args.adapter, args.kind)
    for adapter in adapters:
        columns = ", ".join(adapter.column(v) for v in adapter.variants)
        print(f"{adapter.name:<16} {adapter.runtime:<7} {adapter.package or '-':<28} {columns}")
    selected = cells.build(adapters, _selection(args))
    print(f"{len(selected)} cells")
    return 0


def _new_run(layout: Layout, args: argparse.Namespace) -> store.RunStore:
    run = store.RunStore(layout.results / (args.run_id or store.new_run_id()))
    if run.records_path.exists():
        raise FileExistsError(f"{run.directory}: run exists; use --resume {run.run_id}")
    run.create()
    return run


def _resumed_run(layout: Layout, args: argparse.Namespace) -> tuple[store.RunStore, set[str], dict[str, Any]]:
    """The interrupted run, the keys it has recorded, and its metadata."""
    run = store.latest_run(layout.results) if args.resume == "latest" else store.RunStore(layout.results / args.resume)
    if not run.meta_path.exists():
        raise FileNotFoundError(f"{run.meta_path}: no such run to resume")
    run_meta = run.read_meta()
    run_meta.setdefault("resumed", []).append(datetime.now(timezone.utc).isoformat(timespec="seconds"))
    return run, run.compact(), run_meta


def _resume_selection(args: argparse.Namespace, run_meta: dict[str, Any]) -> None:
    """A resumed run keeps the selection it was started with."""
    settings = run_meta.get("settings", {})
    args.adapter, args.case, args.family = settings["adapters"], settings["cases"], settings["families"]
    args.transport = settings.get("transports", [])
    args.kind = settings.get("kind")
    args.shard, args.budget_scale = tuple(settings["shard"]), settings["budget_scale"]
    args.backend = run_meta.get("backend", "local")


def cmd_run(layout: Layout, args: argparse.Namespace) -> int:
    run_meta: dict[str, Any] | None = None
    if args.resume:
        run, done, run_meta = _resumed_run(layout, args)
        _resume_selection(args, run_meta)
    adapters = _adapters(layout, args.adapter, args.kind)
    selected = cells.build(adapters, _selection(args), args.budget_scale)
    backend = _backend(layout, args)  # before the run directory exists: no engine, no run
    try:
        if not args.resume:  # only once the selection is known to be valid
            run, done = _new_run(layout, args), set()
        todo = [cell for cell in selected if cell.key not in done]
        if done:
            print(f"resuming {run.run_id}: {len(done)} cells recorded, {len(todo)} to run", file=sys.stderr)
        return _run(backend, args, run, run_meta, adapters, selected, done, todo)
    finally:
        backend.close()


def _run(backend: backends.Backend, args: argparse.Namespace, run: store.RunStore, run_meta: dict[str, Any] | None,
         adapters: list[manifest.Adapter], selected: list[cells.Cell], done: set[str], todo: list[cells.Cell]) -> int:
    broken = _run_ready(backend, [a for a in adapters if a.name in {c.adapter.name for c in todo}])
    if run_meta is None:
        settings = {"jobs": args.jobs, "shard": list(args.shard), "adapters": args.adapter, "backend": backend.name,
                    "cases": args.case, "families": args.family, "transports": args.transport, "kind": args.kind,
                    "cells": len(selected),
                    "budget_scale": args.budget_scale}
        run_meta = meta.collect(backend, adapters, run.run_id, settings)
        run_meta["prepare_failures"] = broken
    run.write_meta(run_meta)
    progress = Progress(total=len(done) + len(todo), done=len(done))

    def on_record(record: dict[str, Any]) -> None:
        try:
            outcome = str(cells_frame([record], run_meta).iloc[0]["outcome"])
        except Exception as exc:  # the record is stored; a classification bug must not stop the run
            outcome = f"unclassified ({type(exc).__name__}: {exc})"
        seconds = (record.get("process") or {}).get("wall_ms")
        label = f"{record['column']} {record['case']} {record['schema']}"
        progress.update(label, outcome, seconds / 1000 if seconds else None)

    try:
        runner.run_all(backend, run, todo, jobs=args.jobs, broken=broken, on_record=on_record)
    except runner.Interrupted as exc:
        progress.close()
        print(f"{exc}; finish with: python -m harness run --resume {run.run_id}", file=sys.stderr)
        return 130
    progress.close()
    run_meta["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    run.write_meta(run_meta)
    print(f"results: {run.directory}", file=sys.stderr)
    return 0


def cmd_probe(layout: Layout, args: argparse.Namespace) -> int:
    run = store.latest_run(layout.results) if args.run == "latest" else store.RunStore(layout.results / args.run)
    run_meta = run.read_meta()
    adapters = _adapters(layout, args.adapter)
    backend = _backend(layout, args, default=run_meta.get("backend", "local"))
    try:
        return _probe(backend, args, run, run_meta, adapters)
    finally:
        backend.close()


def _probe(backend: backends.Backend, args: argparse.Namespace, run: store.RunStore, run_meta: dict[str, Any],
           adapters: list[manifest.Adapter]) -> int:
    broken = _run_ready(backend, adapters)
    adapters = [adapter for adapter in adapters if adapter.name not in broken]

    def on_result(result: boundary.Boundary) -> None:
        if result.inconclusive_at:
            found = f"inconclusive: a probe of {result.inconclusive_at:,} bytes timed out"
        elif result.no_limit_up_to:
            found = f"no limit up to {result.no_limit_up_to:,}"
        else:
            found = f"largest accepted {result.largest_accepted or 0:,} bytes"
        print(f"probe {result.column} {result.kind}: {found} ({result.probes} probes)", file=sys.stderr)

    try:
        boundary.probe_all(backend, run, run_meta, adapters, jobs=args.jobs, max_bytes=args.max_bytes,
                           kinds=tuple(args.kind) or boundary.KINDS, on_result=on_result)
    except runner.Interrupted as exc:
        print(exc, file=sys.stderr)
        return 130
    print(f"boundary: {run.directory / 'boundary.json'}", file=sys.stderr)
    return 1 if broken else 0


def cmd_report(layout: Layout, args: argparse.Namespace) -> int:
    run = store.latest_run(layout.results) if args.run == "latest" else store.RunStore(layout.results / args.run)
    out = args.out or layout.reports
    result = layout.root / "servers" / "conformance" / "last-result.json"
    conformance = json.loads(result.read_text()) if result.is_file() else None
    count = report.render(run, out, conformance)
    print(f"report: {out / 'index.html'} ({count} cells from run {run.run_id})", file=sys.stderr)
    return 0


def cmd_diff(layout: Layout, args: argparse.Namespace) -> int:
    run_a, run_b = (store.RunStore(layout.results / run_id) for run_id in (args.run_a, args.run_b))
    for run in (run_a, run_b):
        if not run.meta_path.exists():
            raise FileNotFoundError(f"{run.meta_path}: no such run")
    found = diff.compare_runs(run_a, run_b)
    print(diff.summary(found, args.run_a, args.run_b))
    if found.shared == 0:
        print("error: the runs share no cell", file=sys.stderr)
        return 1
    uneven = bool(found.only_a or found.only_b) and args.require_same_cells
    return 1 if len(found.differing) or uneven else 0


def cmd_catalog(layout: Layout, args: argparse.Namespace) -> int:
    sys.stdout.write(catalog_doc.markdown())
    return 0


COMMANDS = {"prepare": cmd_prepare, "run": cmd_run, "probe": cmd_probe, "report": cmd_report,
            "list": cmd_list, "catalog": cmd_catalog, "base-image": cmd_base_image, "diff": cmd_diff}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    layout = Layout(args.root.resolve())
    try:
        return COMMANDS[args.command](layout, args)
    except (manifest.ManifestError, PrepareError, ValueError, KeyError, FileNotFoundError, FileExistsError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {message}", file=sys.stderr)
        return 2
