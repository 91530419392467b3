"""Command line: ``python -m harness`` (or ``mcp-client-matrix``) with the commands
prepare, run, probe, report, publish, diff, merge, baseline, list, catalog, record and base-image.

This module only parses flags and dispatches; runs are orchestrated by :mod:`harness.run.runs`.
Bad input is one line on stderr (``error: ...``) and exit code 2, with nothing written.

Exit codes: 0 done; 1 ``diff`` found differing cells, or ``baseline check`` cells that do not
match their baseline; 2 bad input (a flag, a name, a run id, an unwritable path); 3 done, but
some columns could not run (an adapter directory is broken or its environment did not build:
their cells are recorded as harness errors); 130 interrupted (finish with ``run --resume``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any, cast

from harness.run.observation import ObservationError

from . import __version__
from .errors import PrepareError, UsageError
from .layout import Layout, harness_commit
from .matrix import catalog, catalog_doc, cells, manifest, versions
from .prepare import images
from .probe import boundary, command
from .publish import baselines, diff, merge, site
from .recorded import case_files, live, record
from .report import pages
from .run import backends, meta, runs, store
from .system import workers

ROOT = Path(__file__).resolve().parent.parent
EXIT_OK, EXIT_DIFFERS, EXIT_USAGE, EXIT_BROKEN_COLUMNS, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def _positive(kind: Callable[[str], Any], what: str, *, zero: bool = False) -> Callable[[str], Any]:
    """A flag's parser: ``kind`` of the text, above 0 (or at least 0 with ``zero``), else ``what`` it expects."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}") from None
        if value < 0 or (value == 0 and not zero):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}")
        return value

    return parse


_jobs = _positive(int, "a positive whole number")
"""A positive count (--jobs, --keep)."""
_count = _positive(int, "a whole number >= 0", zero=True)
_scale = _positive(float, "a positive number")
_bytes = _positive(int, "a positive number of bytes")
_seconds = _positive(float, "a positive number of seconds")


def _shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected INDEX/COUNT, e.g. 2/8") from None
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 1 <= INDEX <= COUNT")
    return index, count


def _run_id(text: str) -> str:
    try:
        return text if text == store.LATEST else store.check_run_id(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Version(argparse.Action):
    """``--version``: the harness version and the checkout's commit (asked only when the flag is given)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the harness version and commit, then exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"mcp-client-matrix {__version__} ({harness_commit(ROOT)})")
        parser.exit()


def _kind_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--kind",
        default=None,
        metavar="{" + ",".join(manifest.KINDS) + "}",
        help=f"only adapters of this kind: {', '.join(manifest.KINDS)} (default: env MCPCM_KIND, else sdk, framework)",
    )


def _selection_flags(command: argparse.ArgumentParser) -> None:
    _kind_flag(command)
    command.add_argument(
        "--adapter", action="append", default=[], help="adapter or column (adapter/variant); repeatable"
    )
    command.add_argument(
        "--with",
        dest="with_versions",
        action="append",
        default=[],
        metavar="ADAPTER@VERSION",
        help="also run the adapter at another version of its package, as a column of its own "
        "(ADAPTER@V1,V2,... for several); repeatable",
    )
    command.add_argument("--case", action="append", default=[], help="case id (`catalog` lists them); repeatable")
    command.add_argument(
        "--case-file",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="run recorded cases (`record` writes them) instead of the catalog: a case file or a directory of them; "
        "repeatable",
    )
    command.add_argument(
        "--family", action="append", default=[], choices=catalog.FAMILIES, help="fault family; repeatable"
    )
    command.add_argument(
        "--transport",
        action="append",
        default=[],
        choices=catalog.TRANSPORTS,
        help="transport; repeatable ("
        + "; ".join(f"{kind.name}: {kind.framing}" for kind in catalog.TRANSPORT_KINDS.values())
        + ")",
    )
    command.add_argument(
        "--protocol",
        action="append",
        default=[],
        choices=catalog.PROTOCOLS,
        help="protocol revision the server speaks and the client is asked for; repeatable",
    )


def _backend_flags(command: argparse.ArgumentParser, *, build: bool = False) -> None:
    command.add_argument(
        "--backend",
        choices=backends.NAMES,
        default=None,
        help="where adapters run: local processes (default) or docker containers",
    )
    if not build:
        command.add_argument(
            "--isolation",
            choices=workers.ISOLATIONS,
            default="worker",
            help="local: a Python adapter's cells are forked from a warm worker (default) or each a fresh process",
        )
    if build:
        command.add_argument(
            "--base-image",
            default=os.environ.get("MCPCM_BASE_IMAGE", images.DEFAULT_BASE_IMAGE),
            help="docker: the image adapter images are built on (env MCPCM_BASE_IMAGE; "
            f"default {images.DEFAULT_BASE_IMAGE})",
        )
        command.add_argument(
            "--ca-bundle",
            type=Path,
            default=os.environ.get("MCPCM_CA_BUNDLE") or None,
            help="docker: a PEM bundle added to the images' trust store for pip and npm (env MCPCM_CA_BUNDLE)",
        )


def _jobs_flag(command: argparse.ArgumentParser, default: int, says: str) -> None:
    command.add_argument(
        "--jobs",
        type=_jobs,
        default=default,
        help=f"cells working at once, an idle one not counted (default: {says}, {default})",
    )


def parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    top = argparse.ArgumentParser(
        prog="python -m harness", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    top.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    top.add_argument("--version", action=_Version)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    prepare = sub.add_parser("prepare", help="build the adapters' environments or docker images (cached)")
    prepare.add_argument("--adapter", action="append", default=[], help="adapter; repeatable (default: all)")
    _kind_flag(prepare)
    _backend_flags(prepare, build=True)
    prepare.add_argument(
        "--jobs",
        type=_jobs,
        default=meta.cpu_count(),
        help="local environments built at once (docker images: one at a time)",
    )

    run = sub.add_parser("run", help="run the matrix into results/<run-id>/")
    _selection_flags(run)
    _backend_flags(run)
    _jobs_flag(run, runs.default_jobs(), f"the cores available and {runs.JOBS_OVER_CORES} more")
    run.add_argument(
        "--wait-jobs",
        type=_count,
        default=None,
        help="cells that mostly wait (a late or missing answer, a client timeout) run at most this many at once, "
        "beside the --jobs others, and at most --jobs + --wait-jobs cells run at all "
        f"(0: every cell in the --jobs slots; default: {runs.WAIT_JOBS_PER_JOB} x --jobs)",
    )
    run.add_argument("--shard", type=_shard, default=(1, 1), help="run shard INDEX of COUNT, e.g. 2/8")
    run.add_argument("--budget-scale", type=_scale, default=1.0, help="multiply every cell's time budget (default 1.0)")
    run.add_argument(
        "--run-id",
        type=_run_id,
        default=None,
        help="name of the run directory: letters, digits, '.', '_', '-' (default: UTC time)",
    )
    run.add_argument(
        "--server-cmd",
        default=None,
        metavar="COMMAND",
        help="live mode: run the --case-file cases against your stdio server itself, through a recording pipe",
    )
    run.add_argument(
        "--server-url",
        default=None,
        metavar="URL",
        help="live mode: run the --case-file cases against your running Streamable HTTP server, through a "
        "recording reverse proxy on loopback",
    )
    run.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="live mode: the server's environment"
    )
    run.add_argument("--cwd", type=Path, default=None, help="live mode: the server's working directory")
    run.add_argument(
        "--fresh",
        action="store_true",
        help="run every cell; by default a cell whose inputs match a cell of an earlier finished run in results/ "
        "takes that cell's record and evidence (docs/architecture.md, Reuse)",
    )
    run.add_argument(
        "--resume",
        nargs="?",
        type=_run_id,
        const=store.LATEST,
        default=None,
        metavar="RUN_ID",
        help="finish an interrupted run (default: the latest) with its original selection",
    )

    probe = sub.add_parser("probe", help="find the largest stdio frame each column accepts, into a run")
    probe.add_argument("--adapter", action="append", default=[], help="adapter; repeatable (default: all)")
    probe.add_argument(
        "--kind", action="append", default=[], choices=boundary.KINDS, help="payload kind; repeatable (default: all)"
    )
    probe.add_argument(
        "--run", type=_run_id, default=store.LATEST, help="the run to add boundary.json to (default: the latest)"
    )
    probe.add_argument(
        "--max-bytes",
        type=_bytes,
        default=boundary.DEFAULT_MAX_BYTES,
        help="the largest frame tried; accepted means 'no limit up to' it (default 64 MiB)",
    )
    _jobs_flag(probe, meta.cpu_count(), "the cores available")
    probe.add_argument(
        "--fresh",
        action="store_true",
        help="run every search; by default a search whose inputs match an entry of this run or an earlier "
        "finished one takes that entry and its probes' evidence",
    )
    _backend_flags(probe)

    rep = sub.add_parser("report", help="render reports/ from a run")
    rep.add_argument("--run", type=_run_id, default=store.LATEST, help="run id (default: the latest)")
    rep.add_argument("--out", type=Path, default=None, help="output directory (default: reports/)")

    compare = sub.add_parser("diff", help="compare two runs cell by cell; exit 1 when a shared cell differs")
    compare.add_argument("run_a", type=_run_id, help="run id")
    compare.add_argument("run_b", type=_run_id, help="run id")
    compare.add_argument(
        "--require-same-cells", action="store_true", help="also fail when a cell is recorded by only one of the runs"
    )

    site = sub.add_parser("publish", help="render a static site of the runs in results/: history, changes, badges")
    site.add_argument("--out", type=Path, default=None, help="the site's directory (default: site/)")
    site.add_argument("--keep", type=_jobs, default=None, help="publish the newest N runs (default: all)")

    expect = sub.add_parser("baseline", help="write a run's outcomes as the expected ones, or check a run against them")
    expect.add_argument("action", choices=("write", "check"), help="write baselines/ from the run, or check the run")
    expect.add_argument("--run", type=_run_id, default=store.LATEST, help="run id (default: the latest)")
    expect.add_argument("--dir", type=Path, default=None, help="the baselines' directory (default: baselines/)")

    combine = sub.add_parser("merge", help="merge the shard runs of one matrix (run --shard K/N) into one run")
    combine.add_argument("runs", nargs="+", type=_run_id, metavar="RUN", help="the shard runs, every one of 1/N..N/N")
    combine.add_argument("--run-id", type=_run_id, required=True, help="the merged run's id (a new run directory)")

    listing = sub.add_parser("list", help="show adapters, columns and the cell count of a selection")
    _selection_flags(listing)

    sub.add_parser("catalog", help="print the fault catalog as Markdown (docs/fault-catalog.md)")

    rec = sub.add_parser("record", help="record one tool's listing and result from your MCP server into a case file")
    server = rec.add_mutually_exclusive_group(required=True)
    server.add_argument("--server-cmd", metavar="COMMAND", help='a stdio server, e.g. "node build/index.js --flag"')
    server.add_argument("--server-url", metavar="URL", help="a Streamable HTTP server, e.g. http://127.0.0.1:3000/mcp")
    rec.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="stdio: set in its environment")
    rec.add_argument("--cwd", type=Path, default=None, help="stdio: the directory it runs in")
    rec.add_argument("--tool", required=True, help="the tool to call (it must be listed)")
    rec.add_argument(
        "--arguments", default="{}", metavar="JSON|@FILE", help="the call's arguments: a JSON object or @file.json"
    )
    rec.add_argument(
        "--protocol",
        default=catalog.LEGACY_PROTOCOL,
        choices=catalog.PROTOCOLS,
        help=f"the revision to speak (default {catalog.LEGACY_PROTOCOL})",
    )
    rec.add_argument("--name", default=None, help="the case's name (default: the tool's); names case-files/NAME.json")
    rec.add_argument("--out", type=Path, default=None, help="the case file to write (default: case-files/NAME.json)")
    rec.add_argument("--timeout", type=_seconds, default=30.0, help="seconds to wait for each answer (default 30)")

    base = sub.add_parser("base-image", help="docker: bootstrap a Debian base image with debootstrap (no registry)")
    base.add_argument("--tag", default=images.BOOTSTRAP_TAG, help=f"image tag (default {images.BOOTSTRAP_TAG})")
    base.add_argument("--suite", default="bookworm", help="Debian suite (default bookworm)")
    base.add_argument("--mirror", default="http://deb.debian.org/debian", help="Debian mirror")
    return top


def _kind(args: argparse.Namespace) -> str | None:
    """``--kind``, else ``MCPCM_KIND``; either must be a known kind."""
    if args.kind is not None:
        return runs.check_kind(args.kind)
    return runs.check_kind(os.environ.get("MCPCM_KIND") or None, "MCPCM_KIND")


def _selection(args: argparse.Namespace) -> cells.Selection:
    pinned = [pin.name for spec in args.with_versions for pin in versions.parse(spec)]
    return cells.Selection(
        (*args.adapter, *pinned),
        tuple(args.case),
        tuple(args.family),
        getattr(args, "shard", (1, 1)),
        tuple(args.transport),
        tuple(args.protocol),
    )


def _case_files(args: argparse.Namespace) -> tuple[case_files.CaseFile, ...]:
    return tuple(case_files.load_all(args.case_file))


def _backend_factory(layout: Layout, args: argparse.Namespace) -> backends.Factory:
    def create(name: str) -> backends.Backend:
        if name == "docker" and hasattr(args, "base_image"):
            return backends.create(name, layout, base_image=args.base_image, ca_bundle=args.ca_bundle)
        if name == "local" and hasattr(args, "isolation"):
            return backends.create(name, layout, isolation=args.isolation)
        return backends.create(name, layout)

    return create


def _exit(outcome: runs.Outcome) -> int:
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_BROKEN_COLUMNS if outcome.broken else EXIT_OK


def cmd_prepare(layout: Layout, args: argparse.Namespace) -> int:
    adapters = runs.select_adapters(layout, args.adapter, _kind(args))
    with closing(_backend_factory(layout, args)(args.backend or "local")) as backend:
        broken = runs.prepare(backend, adapters, build=True, jobs=args.jobs)
    return EXIT_BROKEN_COLUMNS if broken else EXIT_OK


def cmd_base_image(layout: Layout, args: argparse.Namespace) -> int:
    image_id = images.bootstrap_base(args.tag, suite=args.suite, mirror=args.mirror)
    print(f"base image {args.tag}: {image_id}", file=sys.stderr)
    return EXIT_OK


def cmd_list(layout: Layout, args: argparse.Namespace) -> int:
    request = runs.Request(_selection(args), _kind(args), case_files=_case_files(args))
    planned = runs.plan(layout, request)  # validated before anything is printed
    for adapter in planned.adapters:
        if adapter.broken:
            print(f"{adapter.name:<16} BROKEN  {adapter.broken}")
            continue
        columns = ", ".join(adapter.column(v) for v in adapter.variants)
        print(f"{adapter.name:<16} {adapter.runtime:<7} {adapter.package or '-':<28} {columns}")
    print(f"{len(planned.cells)} cells")
    return EXIT_OK


def cmd_run(layout: Layout, args: argparse.Namespace) -> int:
    factory = _backend_factory(layout, args)
    if args.resume:
        return _exit(runs.resume(layout, args.resume, args.jobs, factory))
    recorded = _case_files(args)
    server = live.server_of(
        layout, args.server_cmd, args.server_url, args.env, args.cwd, (f.data["protocol"] for f in recorded)
    )
    request = runs.Request(
        _selection(args),
        _kind(args),
        args.backend or "local",
        args.jobs,
        args.budget_scale,
        args.run_id,
        args.isolation,
        args.wait_jobs,
        recorded,
        server,
        fresh=args.fresh,
    )
    return _exit(runs.start(layout, request, factory))


def cmd_probe(layout: Layout, args: argparse.Namespace) -> int:
    outcome = command.probe(
        layout,
        args.run,
        args.adapter,
        tuple(args.kind) or boundary.KINDS,
        max_bytes=args.max_bytes,
        jobs=args.jobs,
        backend_for=_backend_factory(layout, args),
        backend_name=args.backend,
        fresh=args.fresh,
    )
    return _exit(outcome)


def _conformance(layout: Layout) -> dict[str, Any] | None:
    """The reference server's latest conformance result (``nox -s conformance``), which every page's header names."""
    result = layout.conformance_result
    return cast(dict[str, Any], json.loads(result.read_text())) if result.is_file() else None


def cmd_report(layout: Layout, args: argparse.Namespace) -> int:
    run = store.open_run(layout.results, args.run)
    out = args.out or layout.reports
    conformance = _conformance(layout)
    try:
        count = pages.render(run, out, conformance)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {out}: {exc.strerror or exc}") from exc
    print(f"report: {out / 'index.html'} ({count} cells from run {run.run_id})", file=sys.stderr)
    return EXIT_OK


def cmd_diff(layout: Layout, args: argparse.Namespace) -> int:
    run_a, run_b = (store.open_run(layout.results, run_id) for run_id in (args.run_a, args.run_b))
    found = diff.compare_runs(run_a, run_b)
    print(diff.summary(found, run_a.run_id, run_b.run_id))
    if found.shared == 0:
        print("error: the runs share no cell", file=sys.stderr)
        return EXIT_DIFFERS
    uneven = bool(found.only_a or found.only_b) and args.require_same_cells
    return EXIT_DIFFERS if len(found.differing) or uneven else EXIT_OK


def cmd_record(layout: Layout, args: argparse.Namespace) -> int:
    request = record.request_of(
        layout,
        server_cmd=args.server_cmd,
        server_url=args.server_url,
        env=args.env,
        cwd=args.cwd,
        tool=args.tool,
        arguments=args.arguments,
        protocol=args.protocol,
        name=args.name,
        out=args.out,
        timeout_s=args.timeout,
    )
    path, data = record.record(layout, request)
    server = data["server"]
    error = f" (an isError result: {record.first_text(data['result'])!r})" if data["result"].get("isError") else ""
    print(
        f"recorded {path}: {request.tool} of {server['name'] or 'an unnamed server'} {server['version'] or ''}".rstrip()
        + f", {data['protocol']}, {data['frame_bytes'] or 0:,} bytes{error}",
        file=sys.stderr,
    )
    return EXIT_OK


def cmd_catalog(layout: Layout, args: argparse.Namespace) -> int:
    sys.stdout.write(catalog_doc.markdown())
    return EXIT_OK


def cmd_publish(layout: Layout, args: argparse.Namespace) -> int:
    out = args.out or layout.root / "site"
    conformance = _conformance(layout)
    try:
        published = site.publish(layout.results, out, args.keep, conformance)
    except OSError as exc:
        raise UsageError(f"cannot write the site to {out}: {exc.strerror or exc}") from exc
    print(f"site: {out / 'index.html'} ({len(published)} runs, latest {published[-1].run_id})", file=sys.stderr)
    return EXIT_OK


def cmd_baseline(layout: Layout, args: argparse.Namespace) -> int:
    run = store.open_run(layout.results, args.run)
    directory = args.dir or layout.root / "baselines"
    if args.action == "write":
        written = baselines.write(run, directory)
        print(f"baseline: {len(written)} files in {directory} from run {run.run_id}", file=sys.stderr)
        return EXIT_OK
    result = baselines.check(run, baselines.load_all(directory), layout.clients)
    print(baselines.summary(result, run.run_id))
    return EXIT_DIFFERS if result.failed else EXIT_OK


def cmd_merge(layout: Layout, args: argparse.Namespace) -> int:
    merged = merge.merge(layout.results, args.runs, args.run_id)
    cells = merged.read_meta()["settings"]["cells"]
    print(f"merged {len(args.runs)} runs into {merged.run_id}: {cells} cells ({merged.directory})", file=sys.stderr)
    return EXIT_OK


COMMANDS: dict[str, Callable[[Layout, argparse.Namespace], int]] = {
    "prepare": cmd_prepare,
    "run": cmd_run,
    "probe": cmd_probe,
    "report": cmd_report,
    "list": cmd_list,
    "catalog": cmd_catalog,
    "base-image": cmd_base_image,
    "diff": cmd_diff,
    "merge": cmd_merge,
    "baseline": cmd_baseline,
    "publish": cmd_publish,
    "record": cmd_record,
}

USER_ERRORS = (UsageError, manifest.ManifestError, PrepareError, ObservationError, OSError)
"""Errors that are the user's input or environment, not a bug: one line, exit 2."""


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code (the module docstring lists them)."""
    args = parser().parse_args(argv)
    layout = Layout(args.root.resolve())
    try:
        return COMMANDS[args.command](layout, args)
    except USER_ERRORS as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
