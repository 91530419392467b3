"""Java adapters start from a class-data archive (``harness/class_archive.py``): trained once at
prepare on the control case over every transport, each cell a fresh JVM that maps it (checked at prepare: an archive
built from another checkout's paths is not mapped, and is built again); the same cells as one JVM
per cell without it."""

from __future__ import annotations

import json
import shutil

import pytest

from harness import class_archive, manifest
from harness.layout import Layout
from harness.records import RunMeta

from .conftest import REPO

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("java") is None or shutil.which("mvn") is None, reason="no JDK and Maven"),
]


def test_a_java_column_from_its_class_archive_gives_the_cells_of_one_jvm_per_cell(checkout, tmp_path):
    scratch = checkout("java-sdk")
    scratch.harness("prepare", "--adapter", "java-sdk", timeout=1800)
    home = REPO / ".envs" / "java-sdk" / "class-archive"
    state = json.loads((home / "state.json").read_text())
    assert state["refused"] is None and (home / "adapter.jsa").is_file()
    lists = {path.parent.name: path.read_text() for path in home.glob("training-*/classes.lst")}
    assert set(lists) == {"training-stdio", "training-http-json", "training-http-sse"}
    merged = (home / "classes.lst").read_text().splitlines()
    assert state["classes"] == len(merged) == len(set(merged)) and not any(line.startswith("#") for line in merged)
    assert "java/net/http/HttpClient" in merged, "the HTTP cells' classes are archived too"
    assert set(merged) == {line for text in lists.values() for line in text.splitlines() if not line.startswith("#")}
    # a JVM started as the scratch checkout's cells are (its own paths, -Xshare:on) mapped the archive
    assert "usage: java -jar adapter.jar" in (home / "check.stderr").read_text()
    damaged = tmp_path / "damaged" / "adapter.jsa"
    damaged.parent.mkdir()
    damaged.write_bytes(bytes(4096))
    java_sdk = manifest.load(REPO / "clients" / "java-sdk" / "adapter.toml")
    why = class_archive.why_unmapped(Layout(scratch.root), java_sdk, damaged)
    assert why is not None and "does not map the archive (exit 1)" in why and "shared archive" in why, why
    cases = ("--case", "ok", "--case", "type-swap", "--case", "iserror-bad-structured")
    transports = ("--transport", "stdio", "--transport", "http-json")
    selection = ("--adapter", "java-sdk/list-first", *cases, *transports, "--protocol", "2025-11-25")
    scratch.harness("run", "--run-id", "warm", *selection, timeout=900)
    scratch.harness("run", "--run-id", "cold", "--isolation", "process", *selection, timeout=900)
    warm: RunMeta = scratch.meta("warm")
    assert warm["adapters"]["java-sdk"]["isolation"] == "class-archive"
    assert scratch.meta("cold")["adapters"]["java-sdk"]["isolation"] == "process (--isolation process)"
    done = scratch.harness("diff", "--require-same-cells", "warm", "cold")
    assert done.stdout.strip().endswith("0 differ"), done.stdout
    assert scratch.processes_left() == []
