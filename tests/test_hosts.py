"""Agent hosts: the loopback-only namespace a host cell runs in, and the five hosts end to end
against the scripted model, each one's model view read from the model's journal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.matrix import cells, manifest
from harness.system import loopback

from .conftest import REPO

REACH = """
import os, socket
server = socket.create_server(("127.0.0.1", 0))
socket.create_connection(server.getsockname(), timeout=2).close()
for address in [("192.0.2.1", 80), ("1.1.1.1", 443)]:
    try:
        socket.create_connection(address, timeout=2).close()
        print("reached", address)
    except OSError as exc:
        print("unreachable", address[0], exc.errno)
print(os.readlink("/proc/self/ns/net"))
"""


def test_a_loopback_namespace_reaches_127_0_0_1_and_nothing_else():
    loopback.check()
    done = subprocess.run(
        loopback.command([sys.executable, "-S", "-c", REACH]), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["unreachable 192.0.2.1 101", "unreachable 1.1.1.1 101"], "ENETUNREACH, at once"
    assert lines[2] != os.readlink("/proc/self/ns/net"), "a namespace of its own"


def test_a_command_that_cannot_start_in_the_namespace_is_one_line():
    done = subprocess.run(loopback.command(["/nonexistent/host"]), capture_output=True, text=True, timeout=30)
    assert done.returncode == 127 and done.stderr.strip().startswith("loopback: cannot run /nonexistent/host:")


def test_a_host_cell_starts_its_own_http_server_and_its_server_keeps_the_results_it_sends(tmp_path):
    """An agent host runs in a namespace of its own, where a server the harness started is out of
    reach: over HTTP the cell file hands the adapter the server's command line, not a URL."""
    adapters = {a.name: a for a in manifest.discover(REPO / "clients")}
    selection = cells.Selection(cases=("ok",), protocols=("2025-11-25",))
    host_cells = {c.transport: c for c in cells.build([adapters["codex"]], selection) if c.schema == "hidden"}
    assert set(host_cells) == {"stdio", "http-json", "http-sse"}
    for transport, cell in host_cells.items():
        server = cell.to_file(REPO / "servers" / "reference", tmp_path, python="python3")["server"]
        assert cell.starts_server and (server["command"], server["url"]) == ("python3", None), transport
        args = server["args"]
        assert args[args.index("--results-dir") + 1] == str(tmp_path / "sent")
        assert ("--transport" in args) == (transport != "stdio")
    sdk_cell = next(c for c in cells.build([adapters["ts-sdk"]], selection) if c.transport == "http-sse")
    assert not sdk_cell.starts_server
    sdk_server = sdk_cell.to_file(REPO / "servers" / "reference", tmp_path, "http://127.0.0.1:1/mcp", python="python3")
    assert (sdk_server["server"]["command"], sdk_server["server"]["args"]) == (None, None)


HOSTS = {
    # host: (which channel of `diverge` reached the model, whether `iserror-plain`'s isError did)
    "claude-code": ("structured", True),
    "codex": ("structured", False),
    "gemini-cli": ("text", True),
    "opencode": ("text", False),
    "qwen-code": ("both", True),
}
"""What each pinned host was measured to do (docs/hosts.md); a new host version that does otherwise fails here."""

CUTS = {
    # host: (how much of text-9mib's 9,437,184 characters the model read, the start of the host's own words)
    "claude-code": ("none of 9,437,184 characters", "Error: result (9,437,184 characters across 1 line) exceeds"),
    "codex": ("11,964 of 9,437,184 characters (the first 5,982 and the last 5,982)", "…8 tokens truncated…"),
    "gemini-cli": ("39,959 of 9,437,184 characters (the first 7,980 and the last 31,979)", "Output too large."),
    "opencode": ("none of 9,437,184 characters", "...9437184 bytes truncated..."),
    "qwen-code": ("389 of 9,437,184 characters (the first 389)", "Tool output was too large"),
}
LINK_REACHED = {"claude-code": True, "codex": True, "gemini-cli": True, "opencode": False, "qwen-code": True}
"""Whether resource-link's resource_link block (its URI) reached the model."""


@pytest.mark.slow
def test_each_host_hands_its_model_what_it_measured_offline_in_its_own_namespace(checkout):
    scratch = checkout(*HOSTS, "raw-jsonrpc")
    listed = scratch.cli("list", "--case", "ok").stdout
    assert not any(host in listed for host in HOSTS), "hosts run on request only"
    cases = ["--case", "diverge", "--case", "iserror-plain", "--case", "text-9mib", "--case", "resource-link"]
    stdio = ("--transport", "stdio", "--protocol", "2025-11-25")
    scratch.harness("run", "--run-id", "hosts", "--kind", "host", *cases, *stdio, timeout=1800)
    rows = scratch.rows("hosts")
    assert {key[0] for key in rows} == set(HOSTS)
    for host, (channel, error_seen) in HOSTS.items():
        for schema in ("advertised", "hidden"):
            diverge, error = rows[(host, "diverge", schema)], rows[(host, "iserror-plain", schema)]
            assert diverge["outcome"] == "pass" and diverge["followup"] == "ok", (host, diverge["error_message"])
            assert diverge["model_channel"] == channel, host
            assert str(error["model_error_seen"]) == str(error_seen), host
        assert str(rows[(host, "diverge", "advertised")]["model_schema_shown"]) == "False", host
        assert rows[(host, "diverge", "hidden")]["model_schema_shown"] == "", host
        kept, words = CUTS[host]
        cut = rows[(host, "text-9mib", "none")]
        assert (cut["model_kept"], cut["model_words"][: len(words)]) == (kept, words), host
        link = "yes" if LINK_REACHED[host] else "no"
        assert rows[(host, "resource-link", "none")]["model_blocks"] == f"text: yes; resource_link: {link}", host
    http = ("--transport", "http-sse", "--protocol", "2025-11-25")
    scratch.harness("run", "--run-id", "hosts-http", "--kind", "host", "--case", "diverge", *http, timeout=1800)
    over_http = scratch.rows("hosts-http", transport="http-sse")
    for host, (channel, _) in HOSTS.items():
        for schema in ("advertised", "hidden"):
            diverge = over_http[(host, "diverge", schema)]
            assert (diverge["outcome"], diverge["model_channel"]) == ("pass", channel), (host, diverge["error_message"])
    own = os.readlink("/proc/self/ns/net")
    runs = scratch.root / "results"
    for cell in [*(runs / "hosts" / "cells").iterdir(), *(runs / "hosts-http" / "cells").iterdir()]:
        assert not (cell / "sent").exists(), f"{cell.name}: the driver removes the results it measured against"
        observation = json.loads((cell / "observation.json").read_text())
        namespaces = {call["net_namespace"] for call in observation["calls"]}
        assert namespaces and own not in namespaces, f"{cell.name}: its own network namespace"
        journal = [json.loads(line) for line in (cell / "model.jsonl").read_text().splitlines()]
        peers = [entry["peer"] for entry in journal if entry["event"] == "connection"]
        assert peers and all(peer.startswith("127.0.0.1:") for peer in peers), cell.name
    page = (scratch.root / "reports" / "model-view.html").read_text()
    assert all(host in page for host in HOSTS)
    assert scratch.processes_left() == []
