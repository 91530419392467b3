"""Where things live: the checkout (:class:`Layout`) and the files of one cell directory (:class:`CellFiles`).

Every module that reads or writes a cell directory names its files through :class:`CellFiles`
(or, inside a container, through the same ``*_FILE`` names), so the contract between backends,
runner and report has one home.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

CELL_FILE = "cell.json"
"""The cell file handed to the adapter (``docs/adapters.md``)."""
RAW_OBSERVATION_FILE = "observation.raw.json"
"""What the adapter wrote, before validation (kept as evidence when it is invalid)."""
OBSERVATION_FILE = "observation.json"
"""The validated, elided observation."""
JOURNAL_FILE = "journal.jsonl"
"""The reference server's journal of the wire."""
STDOUT_FILE = "stdout.txt"
STDERR_FILE = "stderr.txt"
SERVER_STDERR_FILE = "server-stderr.txt"
"""The stderr of a reference server the harness started (HTTP cells)."""
REPLAY_FILE = "replay.json"
"""A recorded case's case file, which the cell's reference server replays (``--case-file``)."""
SERVER_ENTRY = "__main__.py"
"""The reference server's command line (``servers/reference/``)."""
LIVE_PIPE = "live_stdio.py"
"""Live mode's recording pipe (stdio), beside the reference server (``servers/reference/``)."""
LIVE_PROXY = "live_http.py"
"""Live mode's recording reverse proxy (Streamable HTTP), beside the reference server."""
MODEL_JOURNAL_FILE = "model.jsonl"
"""An agent host cell's scripted model journal: every connection and request the host made to it."""
SENT_RESULTS_DIRECTORY = "sent"
"""An agent host cell's reference server writes every result it sends here, whole (``--results-dir``):
the host driver compares it with what the model read and reports the comparison, not the payload."""
MODEL_DIRECTORY = "model"
"""The scripted model (``servers/model/``), beside the reference server."""
LIVE_FILE = "live.json"
"""Live mode: the user's server command, directory and environment (or its URL), for the recording
proxy; removed when the cell ends (it may hold credentials)."""


@dataclass(frozen=True)
class Layout:
    """Where things live in a checkout."""

    root: Path

    @property
    def clients(self) -> Path:
        return self.root / "clients"

    @property
    def support(self) -> Path:
        return self.clients / "_support"

    @property
    def server(self) -> Path:
        return self.root / "servers" / "reference"

    @property
    def envs(self) -> Path:
        return self.root / ".envs"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def conformance_result(self) -> Path:
        """The reference server's latest conformance result (``nox -s conformance``)."""
        return self.root / "servers" / "conformance" / "last-result.json"


@dataclass(frozen=True)
class CellFiles:
    """The files of one cell directory (``results/<run>/cells/<key>/``)."""

    directory: Path

    @property
    def cell(self) -> Path:
        return self.directory / CELL_FILE

    @property
    def raw_observation(self) -> Path:
        return self.directory / RAW_OBSERVATION_FILE

    @property
    def observation(self) -> Path:
        return self.directory / OBSERVATION_FILE

    @property
    def journal(self) -> Path:
        return self.directory / JOURNAL_FILE

    @property
    def stdout(self) -> Path:
        return self.directory / STDOUT_FILE

    @property
    def stderr(self) -> Path:
        return self.directory / STDERR_FILE

    @property
    def server_stderr(self) -> Path:
        return self.directory / SERVER_STDERR_FILE

    @property
    def replay(self) -> Path:
        return self.directory / REPLAY_FILE

    @property
    def live(self) -> Path:
        return self.directory / LIVE_FILE


def harness_commit(root: Path) -> str:
    """The checkout's commit, with ``-dirty`` when the work tree has changes; ``unknown`` outside git."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    if not commit:
        return "unknown"
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
