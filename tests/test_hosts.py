"""Agent hosts: the loopback-only namespace a host cell runs in, and the five hosts end to end
against the scripted model, each one's model view read from the model's journal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness import loopback

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
    listed = scratch.harness("list", "--case", "ok").stdout
    assert not any(host in listed for host in HOSTS), "hosts run on request only"
    cases = ["--case", "diverge", "--case", "iserror-plain", "--case", "text-9mib", "--case", "resource-link"]
    scratch.harness("run", "--run-id", "hosts", "--kind", "host", *cases, "--protocol", "2025-11-25", timeout=1800)
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
    own = os.readlink("/proc/self/ns/net")
    for cell in (scratch.root / "results" / "hosts" / "cells").iterdir():
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
