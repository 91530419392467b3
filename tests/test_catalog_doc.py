"""The ``catalog`` command prints the generated fault catalog (test_docs.py: it equals docs/fault-catalog.md)."""

from __future__ import annotations

import subprocess
import sys

from harness.matrix import catalog_doc

from .conftest import REPO


def test_catalog_command_prints_the_generated_markdown():
    done = subprocess.run(
        [sys.executable, "-m", "harness", "catalog"], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout == catalog_doc.markdown()
    assert done.stdout.startswith("# ") and "`wrong-id`" in done.stdout
