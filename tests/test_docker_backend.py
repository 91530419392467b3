"""The docker backend: images built once, cells in containers, bounds and cleanup as on the host.

These tests need a Docker engine and a base image (``MCPCM_BASE_IMAGE``, default
``debian:bookworm-slim``; ``nox -s base-image`` makes one offline). They are marked ``docker``
and run in CI (``.ci/run`` starts an engine); elsewhere they are skipped when the ``docker`` Python
package is missing or no engine answers, unless ``MCPCM_REQUIRE_DOCKER=1`` makes either a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess

import pytest

from harness.layout import Layout
from harness.run.backends.docker import DockerBackend
from tests.conftest import FIXTURE_CLIENTS

REQUIRE_DOCKER = os.environ.get("MCPCM_REQUIRE_DOCKER") == "1"

try:
    import docker
except ImportError as missing:
    if not REQUIRE_DOCKER:
        pytest.skip("the docker package is not installed (pip install -e '.[docker]')", allow_module_level=True)
    docker = None  # every test fails in the engine fixture, saying why
    DOCKER_MISSING = f"MCPCM_REQUIRE_DOCKER=1 but the docker package is not installed: {missing}"

pytestmark = pytest.mark.docker

BASE = os.environ.get("MCPCM_BASE_IMAGE", "debian:bookworm-slim")
OWNER_LABEL = "org.mcp-client-matrix.owner"
CELL_LABEL = "org.mcp-client-matrix.cell"


@pytest.fixture(scope="module")
def engine():
    if docker is None:
        pytest.fail(DOCKER_MISSING)
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # no engine here
        if REQUIRE_DOCKER:
            raise
        pytest.skip(f"no Docker engine: {exc}")
    return client


def _build_args() -> list[str]:
    args = ["--backend", "docker", "--base-image", BASE]
    if os.environ.get("MCPCM_CA_BUNDLE"):
        args += ["--ca-bundle", os.environ["MCPCM_CA_BUNDLE"]]
    return args


def _containers_left(engine, scratch) -> list[str]:
    """Containers of this checkout's cells still present (other runs may share the engine)."""
    return [
        c.name
        for c in engine.containers.list(all=True, filters={"label": OWNER_LABEL})
        if c.labels.get(CELL_LABEL, "").startswith(str(scratch.root))
    ]


def test_images_are_built_once_and_bad_adapters_are_contained(engine, checkout):
    scratch = checkout("raw-jsonrpc", "hang", "crash", "garbage")
    adapters = [arg for name in ("raw-jsonrpc", "hang", "crash", "garbage") for arg in ("--adapter", name)]
    scratch.harness("prepare", *adapters, *_build_args(), timeout=900)
    again = scratch.harness("prepare", *adapters, *_build_args())
    assert again.stderr.count(": cached") == 4, again.stderr

    scratch.harness(
        "run",
        "--backend",
        "docker",
        "--run-id",
        "docker",
        "--case",
        "ok",
        "--case",
        "type-swap",
        "--budget-scale",
        "0.1",
        "--jobs",
        "2",
        "--protocol",
        "2025-11-25",
    )
    rows = scratch.rows("docker")
    for case in ("ok", "type-swap"):
        for schema in ("advertised", "hidden"):
            assert rows[("raw-jsonrpc", case, schema)]["outcome"] == "pass"
            hang = rows[("hang", case, schema)]
            assert hang["outcome"] == "timeout" and hang["timeout_by"] == "harness"
            assert rows[("crash", case, schema)]["outcome"] == "crash"
            assert "invalid observation" in rows[("garbage", case, schema)]["error_message"]
    http = scratch.rows("docker", transport="http-json")
    assert http[("raw-jsonrpc", "ok", "advertised")]["outcome"] == "pass"

    records = {r["key"]: r for r in scratch.records("docker")}
    stdio = records["raw-jsonrpc--default--ok--advertised--stdio--2025-11-25"]
    assert stdio["journal"][0]["event"] == "start", "the server ran in the container and journaled"
    http_record = records["raw-jsonrpc--default--ok--advertised--http-json--2025-11-25"]
    assert http_record["journal"][-1]["event"] == "exit", "the server container was stopped, not killed"

    meta = json.loads((scratch.root / "results" / "docker" / "meta.json").read_text())
    assert meta["backend"] == "docker"
    image = meta["adapters"]["raw-jsonrpc"]
    assert image["image"].startswith("mcpcm/raw-jsonrpc:") and image["image_id"].startswith("sha256:")
    assert image["runtime_version"].startswith("3.")
    assert _containers_left(engine, scratch) == [], "timed-out cells' containers are removed"
    assert scratch.processes_left() == []


def test_a_run_without_an_image_says_how_to_build_it(engine, checkout):
    scratch = checkout()
    adapter = scratch.root / "clients" / "unbuilt"
    shutil.copytree(FIXTURE_CLIENTS / "crash", adapter)
    (adapter / "adapter.toml").write_text((adapter / "adapter.toml").read_text().replace('"crash"', '"unbuilt"'))
    (adapter / "nonce.txt").write_text(os.urandom(8).hex())  # sources no image was ever built from
    done = scratch.harness(
        "run", "--backend", "docker", "--run-id", "unbuilt", "--case", "ok", "--transport", "stdio", check=False
    )
    assert done.returncode == 3, "the run is recorded, and says that a column could not run"
    records = scratch.records("unbuilt")
    assert records and all("no image built from the current clients/unbuilt" in r["harness_error"] for r in records)
    assert "nox -s images" in records[0]["harness_error"]


def test_a_new_backend_removes_containers_whose_run_was_killed(engine, tmp_path):
    """A run killed outright (engine and all) leaves its containers; the next run removes them."""
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer runs
    host = socket.gethostname()
    image = engine.images.get(BASE).id

    def leave(owner: str, host_label: str | None) -> str:
        labels = {OWNER_LABEL: owner, CELL_LABEL: str(tmp_path / owner)}
        if host_label is not None:
            labels["org.mcp-client-matrix.host"] = host_label
        return engine.containers.create(image, ["true"], labels=labels).id

    killed = leave(f"{gone.pid}-deadbeef", host)
    before_host_labels = leave(f"{gone.pid}-cafe0000", None)
    running = leave(f"{os.getpid()}-0badf00d", host)
    elsewhere = leave(f"{gone.pid}-feedface", "another-host")
    try:
        DockerBackend(Layout(tmp_path))
        left = {c.id for c in engine.containers.list(all=True, filters={"label": OWNER_LABEL})}
        assert killed not in left and before_host_labels not in left, "orphans of a dead run are removed"
        assert running in left, "a live run's containers are left alone"
        assert elsewhere in left, "another host's containers are left alone"
    finally:
        for container in (killed, before_host_labels, running, elsewhere):
            try:
                engine.containers.get(container).remove(force=True)
            except docker.errors.NotFound:
                pass


def test_a_recorded_case_replays_in_containers(engine, checkout, tmp_path):
    scratch = checkout("raw-jsonrpc")
    scratch.harness("prepare", "--adapter", "raw-jsonrpc", *_build_args(), timeout=900)
    case_file = tmp_path / "count.json"
    result = {"content": [{"type": "text", "text": '{"n": 1}'}], "structuredContent": {"n": 1}}
    case_file.write_text(
        json.dumps(
            {
                "case_file": 1,
                "name": "count",
                "server": {"name": "counter", "version": "1.0.0"},
                "protocol": "2025-11-25",
                "tool": {"name": "count", "inputSchema": {"type": "object"}},
                "arguments": {"n": 1},
                "result": result,
            }
        )
    )
    scratch.harness("run", "--backend", "docker", "--adapter", "raw-jsonrpc", "--case-file", str(case_file),
                    "--run-id", "replay")  # fmt: skip
    records = scratch.records("replay")
    assert {r["transport"] for r in records} == {"stdio", "http-json", "http-sse"}
    for record in records:
        sent = [e["message"]["result"] for e in record["journal"] if e.get("event") == "send" and e.get("id") == 2]
        assert record["observation"]["calls"][0]["status"] == "returned", record["key"]
        assert result in sent, f"{record['key']}: the recorded result, as sent"
    assert _containers_left(engine, scratch) == []
