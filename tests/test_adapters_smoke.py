"""A smoke cell per adapter: every directory of clients/ runs the control case on every column of its own.

Adapters are discovered from the directory, never listed here, so a new adapter is covered the day it
is added. The control case ``ok`` is a valid result; what must hold for it is the same for every
client: the call passes, the follow-up works, the installed version is the pinned one, and a framework
or agent host column says through which channel the model read the result.
"""

from __future__ import annotations

import pytest

from harness.matrix import manifest

from .conftest import REPO
from .test_e2e import pinned_version

ADAPTERS = sorted(
    entry.name for entry in (REPO / "clients").iterdir() if entry.is_dir() and not entry.name.startswith(("_", "."))
)


@pytest.mark.slow
def test_every_adapter_passes_the_control_case(checkout):
    assert len(ADAPTERS) >= 18
    scratch = checkout(*ADAPTERS)
    named = [arg for name in ADAPTERS for arg in ("--adapter", name)]  # hosts run only when named
    selection = (*named, "--case", "ok", "--transport", "stdio", "--protocol", "2025-11-25")
    scratch.harness("run", "--run-id", "smoke", *selection, "--jobs", "2", timeout=3600)
    rows = scratch.rows("smoke")
    checked = set()
    for name in ADAPTERS:
        adapter = manifest.load(REPO / "clients" / name / "adapter.toml")
        version = pinned_version(name) if adapter.package else ""
        for variant in adapter.variants:
            column = adapter.column(variant)
            row = rows[(column, "ok", "advertised")]
            assert row["outcome"] == "pass", (column, row["error_message"])
            assert row["followup"] == "ok", column
            assert str(row["package_version"]) == version, (column, "the installed version is the pinned one")
            if adapter.kind in manifest.MODEL_VIEW_KINDS:
                assert row["model_channel"] not in ("", None), (column, "the model view was derived")
            checked.add(name)
    assert checked == set(ADAPTERS), "every adapter directory has a column that ran"
    assert scratch.processes_left() == []
