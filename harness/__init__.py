"""mcp-client-matrix: run one reference MCP server against many real clients and compare.

The pipeline (``docs/architecture.md``): :mod:`catalog` (fault cases) and :mod:`manifest`
(adapters) give :mod:`cells`; :mod:`runs` plans and starts a run, :mod:`runner` runs each cell on
a backend (:mod:`backends`: a bounded process group, :mod:`process`, or a container) and stores
records (:mod:`store`, :mod:`meta`); :mod:`classify` turns records into outcomes with pandas;
:mod:`report` renders the static HTML matrix. The records that cross these modules are typed in
:mod:`records`, the file names of a checkout and a cell directory live in :mod:`layout`.
:mod:`cli` is the command line (``python -m harness``, ``mcp-client-matrix``).
"""

__version__ = "0.1.0"
