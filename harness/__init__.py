"""mcp-client-matrix: run one reference MCP server against many real clients and compare.

The pipeline (``docs/architecture.md``): :mod:`catalog` (fault cases) and :mod:`manifest`
(adapters) give :mod:`cells`; :mod:`runner` runs each cell as a bounded process group
(:mod:`process`) in an environment from :mod:`environments` and stores records (:mod:`store`,
:mod:`meta`); :mod:`classify` turns records into outcomes with pandas; :mod:`report` renders the
static HTML matrix. :mod:`cli` is the command line (``python -m harness``).
"""

__version__ = "0.1.0"
