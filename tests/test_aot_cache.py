"""Java adapters run on their pinned JDK with an ahead-of-time cache per transport
(``harness/prepare/aot_cache.py``): trained once at prepare on the control case, each cell a fresh JVM that
maps its transport's cache (checked at prepare: a damaged cache is refused with the JVM's words);
the same cells as one JVM per cell without it."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.layout import Layout
from harness.matrix import manifest
from harness.prepare import aot_cache, environments
from harness.records import RunMeta

from .conftest import REPO

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("java") is None or shutil.which("mvn") is None, reason="no JDK and Maven"),
]


def test_a_java_column_from_its_caches_gives_the_cells_of_one_jvm_per_cell(checkout, tmp_path):
    scratch = checkout("java-sdk")
    scratch.harness("prepare", "--adapter", "java-sdk", timeout=1800)
    java_sdk = manifest.load(REPO / "clients" / "java-sdk" / "adapter.toml")
    assert java_sdk.jdk, "the Java SDK's column pins its JDK"
    home = REPO / ".envs" / "java-sdk" / aot_cache.DIRECTORY
    state = json.loads((home / "state.json").read_text())
    assert state["refused"] is None
    assert {path.name for path in home.glob("*.aot")} == {"stdio.aot", "http-json.aot", "http-sse.aot"}
    # a JVM started as the scratch checkout's cells are (its own paths, -XX:AOTMode=on) mapped each cache
    assert "usage: java -jar adapter.jar" in (home / "stdio.check.stderr").read_text()
    layout = Layout(scratch.root)
    java = environments.java_for(layout, java_sdk)
    assert java is not None and java.resolve().is_relative_to((REPO / ".envs" / "jdk").resolve())
    damaged = tmp_path / "damaged" / "stdio.aot"
    damaged.parent.mkdir()
    damaged.write_bytes(bytes(4096))
    why = aot_cache.why_unmapped(layout, java_sdk, damaged, java)
    assert why is not None and "does not map the cache (exit 1)" in why, why
    cases = ("--case", "ok", "--case", "type-swap", "--case", "iserror-bad-structured")
    transports = ("--transport", "stdio", "--transport", "http-json")
    selection = ("--adapter", "java-sdk/list-first", *cases, *transports, "--protocol", "2025-11-25", "--fresh")
    scratch.harness("run", "--run-id", "warm", *selection, timeout=900)
    scratch.harness("run", "--run-id", "cold", "--isolation", "process", *selection, timeout=900)
    warm: RunMeta = scratch.meta("warm")
    assert warm["adapters"]["java-sdk"]["isolation"] == "aot-cache"
    assert warm["adapters"]["java-sdk"]["runtime_version"] == java_sdk.jdk.rsplit(".", 1)[0]
    assert scratch.meta("cold")["adapters"]["java-sdk"]["isolation"] == "process (--isolation process)"
    observed = {record["observation"]["runtime_version"] for run in ("warm", "cold") for record in scratch.records(run)}
    assert observed == {java_sdk.jdk.rsplit(".", 1)[0]}, "warm or cold, the cells ran on the pinned JDK"
    done = scratch.cli("diff", "--require-same-cells", "warm", "cold")
    assert done.stdout.strip().endswith("0 differ"), done.stdout
    assert scratch.processes_left() == []
