"""Sessions: ``nox`` prepares every client environment, runs the matrix and renders the report.

- ``prepare``: a venv per Python adapter, ``npm ci`` per Node adapter (cached).
- ``matrix``:  run every cell into ``results/<run-id>/`` (arguments after ``--`` go to
  ``python -m harness run``, e.g. ``nox -s matrix -- --adapter ts-sdk --family size``).
- ``report``:  render ``reports/`` from the latest run.
- ``tests``:   the test suite (``nox -s tests -- -m slow`` for the slow end-to-end tests only).
- ``benchmark``: time the full matrix (``docs/benchmarks.md``).
"""

from __future__ import annotations

import nox

nox.options.sessions = ["prepare", "matrix", "report"]
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True

def _install(session: nox.Session, *extras: str) -> None:
    spec = ".[" + ",".join(extras) + "]" if extras else "."
    session.install("-e", spec)


@nox.session
def prepare(session: nox.Session) -> None:
    """Build (or reuse) every adapter's pinned environment."""
    _install(session)
    session.run("python", "-m", "harness", "prepare", *session.posargs)


@nox.session
def matrix(session: nox.Session) -> None:
    """Run the fault matrix against every client column."""
    _install(session)
    session.run("python", "-m", "harness", "run", *session.posargs)


@nox.session
def report(session: nox.Session) -> None:
    """Render reports/index.html, the evidence pages and reports/data/ from the latest run."""
    _install(session)
    session.run("python", "-m", "harness", "report", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite: real processes, real SDK clients, loopback only."""
    _install(session, "test")
    session.run("python", "-m", "pytest", *(session.posargs or ["-m", "not slow"]))


@nox.session
def benchmark(session: nox.Session) -> None:
    """Time the full matrix and the per-cell overhead (docs/benchmarks.md)."""
    _install(session)
    session.run("python", "benchmarks/matrix_benchmark.py", *session.posargs)
