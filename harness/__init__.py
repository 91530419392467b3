"""mcp-client-matrix: run one reference MCP server against many real clients and compare.

The subpackages are the pipeline, in the order they may import each other (an earlier one never
imports a later one; ``tests/test_imports.py`` holds the code to it, ``docs/architecture.md`` maps
it):

- :mod:`harness.errors`, :mod:`harness.layout`, :mod:`harness.records`: one-line errors, where files
  live, the typed records that cross the stages. They import nothing of the harness.
- :mod:`harness.system`: the processes the harness starts, at the operating system's level.
- :mod:`harness.matrix`: what the matrix is: the fault catalog, the adapters' manifests, the
  versions as columns, and the cells they make.
- :mod:`harness.recorded`: a user's own server: recording a tool into a case file, running its
  cells live.
- :mod:`harness.classify`: from stored evidence to outcomes, with pandas; pure functions.
- :mod:`harness.prepare`: each adapter's environment, built once and cached.
- :mod:`harness.run`: a run: its cells planned, reused or run on a backend, stored.
- :mod:`harness.probe`: the byte-exact frame-limit search over a run's columns.
- :mod:`harness.report`: the static pages of one run.
- :mod:`harness.publish`: across runs: the site with history, changes, baselines, merges, diffs.

:mod:`harness.cli` is the command line (``python -m harness``, ``mcp-client-matrix``).
"""

__version__ = "0.1.0"
