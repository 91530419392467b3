"""Sessions: ``nox`` prepares every client environment, runs the matrix, probes the frame limits,
checks the reference server with the conformance suite and renders the report.

- ``prepare``: a venv per Python adapter (uv), ``npm ci`` per Node adapter, in parallel (cached).
- ``matrix``:  run every cell into ``results/<run-id>/`` (arguments after ``--`` go to
  ``python -m harness run``, e.g. ``nox -s matrix -- --adapter ts-sdk --family size``).
- ``probe``:   find the largest stdio frame each column accepts (``boundary.json`` of the run).
- ``report``:  render ``reports/`` from the latest run.
- ``publish``: a static site of every finished run in ``results/`` (``site/``: history, changes
  between runs, badges; ``-- --out DIR --keep N``).
- ``merge``:   merge the shard runs of one matrix into one run (``-- RUN... --run-id ID``).
- ``check``:   run the adapters that have an expected-outcome baseline (``baselines/``) and fail
  on every cell that does not match it (``python -m harness baseline write`` writes them).
- ``record``:  record one tool of your own MCP server into a case file (``case-files/NAME.json``).
- ``examples``: build the example servers ``record`` is shown on (``servers/examples/``).
- ``tests``:   the test suite (``nox -s tests -- -m slow`` for the slow end-to-end tests only).
- ``lint``:    ruff check and ruff format --check (``nox -s lint -- --fix`` to fix what can be fixed).
- ``typecheck``: mypy, strict, over the harness and the reference server.
- ``benchmark``: time the full matrix (``docs/benchmarks.md``).
- ``images``:  build one docker image per adapter for the docker backend (cached by content hash;
  ``-- --base-image IMAGE --ca-bundle PEM``), then ``nox -s matrix -- --backend docker``.
- ``base-image``: bootstrap a Debian base image with debootstrap where none can be pulled.
- ``backend-parity``: run the same cells on the local and the docker backend and fail on any
  difference (CI).
- ``isolation-parity``: run the same cells started warm (forked from warm workers, from startup
  snapshots) and as one process each, and fail on any difference (CI).
- ``conformance``: the official MCP conformance suite's server tools scenarios against the reference
  server over Streamable HTTP, at 2025-11-25 and at 2026-07-28; the report's header names the
  result (``servers/conformance/``;
  ``-- --output PATH`` to write the result elsewhere than ``servers/conformance/last-result.json``;
  a result of the same server, suite and selection is reused, ``-- --fresh`` runs again).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

import nox

nox.options.sessions = ["prepare", "matrix", "probe", "conformance", "report"]
nox.options.reuse_venv = "yes"
nox.options.default_venv_backend = "uv|virtualenv"  # uv when nox can find it (README installs it), else virtualenv
nox.options.error_on_missing_interpreters = True


ROOT = Path(__file__).resolve().parent
CONSTRAINTS = ROOT / "constraints.txt"
"""Exact versions of everything the harness's own environments install."""


COMPILE = (
    "import compileall, sysconfig; "
    "compileall.compile_dir(sysconfig.get_paths()['purelib'], quiet=1, workers=0); "
    f"compileall.compile_dir({str(ROOT / 'harness')!r}, quiet=1)"
)
"""Byte-compile the session's packages and the harness (what is compiled already is skipped)."""


def _install(session: nox.Session, *extras: str) -> None:
    """The harness with ``extras`` into the session's venv, byte-compiled: uv writes no ``.pyc`` at
    install, and where ``PYTHONDONTWRITEBYTECODE`` is set (this project's CI machines) Python never
    writes them either, so every ``python -m harness`` compiled pandas and numpy again (5 s of CPU a
    process; the tests start hundreds)."""
    spec = ".[" + ",".join(extras) + "]" if extras else "."
    session.install("-c", str(CONSTRAINTS), "-e", spec)
    session.run("python", "-c", COMPILE, silent=True)


BROKEN_COLUMNS = 3
"""``python -m harness``'s exit code for "done, but some columns could not run" (README, Exit codes)."""


def _harness(session: nox.Session, command: str) -> None:
    """``python -m harness COMMAND`` with the session's arguments, in the session's venv.

    A column that could not run (a broken adapter directory, an environment that did not build)
    does not stop the default run: its cells are harness errors in the report, and the harness
    has already printed why.
    """
    _install(session, "docker")
    session.run("python", "-m", "harness", command, *session.posargs, success_codes=[0, BROKEN_COLUMNS])


@nox.session
def prepare(session: nox.Session) -> None:
    """Build (or reuse) every adapter's pinned environment."""
    _harness(session, "prepare")


@nox.session
def matrix(session: nox.Session) -> None:
    """Run the fault matrix against every client column."""
    _harness(session, "run")


@nox.session
def probe(session: nox.Session) -> None:
    """Find the largest stdio frame each column accepts, into the latest run (boundary.json)."""
    _harness(session, "probe")


@nox.session
def record(session: nox.Session) -> None:
    """Record one tool of your MCP server into a case file (``-- --server-cmd CMD | --server-url URL
    --tool NAME --arguments JSON``; ``python -m harness record --help``)."""
    _harness(session, "record")


@nox.session(venv_backend="none")
def examples(session: nox.Session) -> None:
    """Build the example servers (Python SDK and TypeScript SDK, pinned) and print how to start each."""
    session.run(sys.executable, str(ROOT / "servers" / "examples" / "build.py"), *session.posargs, external=True)


@nox.session
def report(session: nox.Session) -> None:
    """Render reports/index.html, the evidence pages and reports/data/ from the latest run."""
    _harness(session, "report")


@nox.session
def publish(session: nox.Session) -> None:
    """Render site/: every finished run's report, the changes between runs, badges (``-- --out DIR --keep N``)."""
    _harness(session, "publish")


@nox.session
def check(session: nox.Session) -> None:
    """Run the adapters that have a baseline (``baselines/*.yaml``) and fail listing every cell whose
    outcome differs from it, has no entry, or every stale entry (``-- <run flags>``: e.g. a --family)."""
    _install(session, "docker")
    names = sorted(path.stem for path in Path("baselines").glob("*.yaml"))
    if not names:
        session.error("no baselines/*.yaml: write them with `python -m harness baseline write --run RUN`")
    chosen = any(arg.startswith("--adapter") for arg in session.posargs)
    adapters = [] if chosen else [arg for name in names for arg in ("--adapter", name)]
    run_id = "check-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    session.run(
        "python", "-m", "harness", "run", "--run-id", run_id, *adapters, *session.posargs,
        success_codes=[0, BROKEN_COLUMNS],
    )  # fmt: skip
    session.run("python", "-m", "harness", "baseline", "check", "--run", run_id)


@nox.session
def merge(session: nox.Session) -> None:
    """Merge the shard runs of one matrix into one run (``-- RUN... --run-id ID``)."""
    _harness(session, "merge")


@nox.session
def images(session: nox.Session) -> None:
    """Build (or reuse) one docker image per adapter (``-- --adapter NAME --base-image IMAGE --ca-bundle PEM``)."""
    _install(session, "docker")
    session.run("python", "-m", "harness", "prepare", "--backend", "docker", *session.posargs)


@nox.session(name="base-image")
def base_image(session: nox.Session) -> None:
    """Bootstrap mcpcm/debian-base:bookworm with debootstrap + docker import (root; no registry needed)."""
    _harness(session, "base-image")


PARITY_ADAPTERS = ("raw-jsonrpc", "python-mcp", "ts-sdk", "go-sdk/call-only")
PARITY_SCHEMA_CASES = (
    "ok",
    "type-swap",
    "wrong-container",
    "iserror-valid-structured",
    "missing-content",
    "corrupt-plausible",
    "error",
    "latency",
    "structured-array",
    "schema-ref-unresolvable",
)
"""A third of the schema family: the control case, a wrong type, a non-object result (two ways),
isError with structured content, no content, text that disagrees, a JSON-RPC error, a late answer
and a schema the client cannot resolve."""
PARITY_SIZE_CASES = ("text-9mib", "text-10mib")
PARITY_MODERN_CASES = ("ok", "wrong-container", "unsupported-version")


@nox.session(name="backend-parity")
def backend_parity(session: nox.Session) -> None:
    """On the local and the docker backend, every transport: a third of the schema family and two
    size cases under 2025-11-25, three cases under 2026-07-28; fail on any difference.

    Arguments go to the image build (``-- --base-image IMAGE --ca-bundle PEM``).
    """
    _install(session, "docker")
    adapters = [arg for name in PARITY_ADAPTERS for arg in ("--adapter", name)]
    session.run("python", "-m", "harness", "prepare", "--backend", "docker", *adapters, *session.posargs)
    parts = {
        "legacy": (PARITY_SCHEMA_CASES + PARITY_SIZE_CASES, "2025-11-25"),
        "modern": (PARITY_MODERN_CASES, "2026-07-28"),
    }
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for part, (case_ids, protocol) in parts.items():
        cases = [arg for case_id in case_ids for arg in ("--case", case_id)]
        for backend in ("local", "docker"):
            session.run(
                "python", "-m", "harness", "run", "--fresh", "--backend", backend, *adapters, *cases,
                "--protocol", protocol, "--run-id", f"parity-{stamp}-{part}-{backend}",
            )  # fmt: skip
        session.run(
            "python", "-m", "harness", "diff", "--require-same-cells",
            f"parity-{stamp}-{part}-local", f"parity-{stamp}-{part}-docker",
        )  # fmt: skip


ISOLATION_SDK_COLUMNS = ("raw-jsonrpc", "python-mcp", "python-mcp-v1", "ts-sdk/call-only", "ts-client-v2/list-first")
ISOLATION_FRAMEWORK_COLUMNS = ("pydantic-ai/default", "smolagents/default", "langchain-js/default")
ISOLATION_TRANSPORT_CASES = ("no-response", "cancel-then-followup", "stdout-noise", "exit-mid-call")
ISOLATION_HTTP_CASES = ("ok", "type-swap", "drop-required", "iserror-plain", "latency")
"""Over Streamable HTTP, where the warm side's reference server is forked from a worker too."""


@nox.session(name="isolation-parity")
def isolation_parity(session: nox.Session) -> None:
    """A subset, Python and Node, started warm (forked from workers, from snapshots; HTTP cells'
    servers forked from a worker) and as one process per cell; fail on any difference: on stdio the
    schema family under 2025-11-25 on SDK and framework columns and four transport cases on the SDK
    columns under both revisions; over both HTTP transports five schema cases on the SDK columns."""
    _install(session, "docker")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    sdk_columns = [arg for name in ISOLATION_SDK_COLUMNS for arg in ("--adapter", name)]
    selections = [
        [arg for name in ISOLATION_SDK_COLUMNS + ISOLATION_FRAMEWORK_COLUMNS for arg in ("--adapter", name)]
        + ["--family", "schema", "--protocol", "2025-11-25", "--transport", "stdio"],
        sdk_columns
        + [arg for case in ISOLATION_TRANSPORT_CASES for arg in ("--case", case)]
        + ["--transport", "stdio"],
        sdk_columns
        + [arg for case in ISOLATION_HTTP_CASES for arg in ("--case", case)]
        + ["--protocol", "2025-11-25", "--transport", "http-json", "--transport", "http-sse"],
    ]
    for part, selection in enumerate(selections):
        for isolation in ("worker", "process"):
            run_id = f"isolation-{stamp}-{part}-{isolation}"
            session.run(
                "python", "-m", "harness", "run", "--fresh", "--isolation", isolation, *selection, "--run-id", run_id,
            )  # fmt: skip
        session.run(
            "python", "-m", "harness", "diff", "--require-same-cells",
            f"isolation-{stamp}-{part}-worker", f"isolation-{stamp}-{part}-process",
        )  # fmt: skip


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite: real processes, real SDK clients, loopback only."""
    _install(session, "test", "docker", "browser")
    default = ["-m", "not slow and not docker and not browser"]
    session.run("python", "-m", "pytest", "--durations=15", *(session.posargs or default))


LINTED = ("harness", "servers", "clients", "tests", "benchmarks", "noxfile.py")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check (``-- --fix`` applies the fixes and formats)."""
    _install(session, "lint")
    if "--fix" in session.posargs:
        session.run("ruff", "check", "--fix", *LINTED)
        session.run("ruff", "format", *LINTED)
        return
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over harness/, then over servers/reference/ and servers/model/ (pyproject.toml [tool.mypy]).

    Each server runs as a directory of sibling modules (``python servers/reference``), so it is
    checked with that directory as its import root.
    """
    _install(session, "typecheck", "test", "docker")
    session.run("mypy", *session.posargs)
    for name in ("reference", "model"):
        server = ROOT / "servers" / name
        modules = sorted(str(path) for path in server.glob("*.py") if path.name != "__init__.py")
        session.run(
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--explicit-package-bases",
            *modules,
            env={"MYPYPATH": str(server)},
        )


@nox.session
def benchmark(session: nox.Session) -> None:
    """Time the full matrix and the per-cell overhead (docs/benchmarks.md)."""
    _install(session, "docker")
    session.run("python", "benchmarks/matrix_benchmark.py", *session.posargs)


CONFORMANCE_DIR = ROOT / "servers" / "conformance"


@nox.session(venv_backend="none")
def conformance(session: nox.Session) -> None:
    """Run the pinned @modelcontextprotocol/conformance server scenarios (tools) against the reference server,
    once per revision it speaks (servers/conformance/run.py)."""
    npm = shutil.which("npm")
    if npm is None:
        session.error("npm is not on PATH: it installs the pinned conformance suite")
    lock = CONFORMANCE_DIR / "package-lock.json"
    stamp = CONFORMANCE_DIR / "node_modules" / ".mcpcm-stamp"
    fingerprint = hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp.is_file() and stamp.read_text() == fingerprint:
        session.log("servers/conformance/node_modules is up to date (npm ci skipped)")
    else:
        with session.chdir(CONFORMANCE_DIR):
            session.run(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error", external=True)
        stamp.write_text(fingerprint)
    args = list(session.posargs)
    if "--output" not in args:
        args += ["--output", str(CONFORMANCE_DIR / "last-result.json")]
    output = Path(args[args.index("--output") + 1])
    try:  # run.py keeps a result of the same inputs, removes any other (never a stale result)
        session.run(sys.executable, str(CONFORMANCE_DIR / "run.py"), *args, external=True)
    finally:
        if output.is_file():
            result = json.loads(output.read_text())
            per_revision = ", ".join(
                f"{counts['passed']}/{counts['scenarios']} at {revision}"
                for revision, counts in result["counts"]["by_revision"].items()
            )
            session.log(f"conformance version {result['conformance']['version']}: {per_revision} scenarios passed")
