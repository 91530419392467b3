"""Manifest validation: every bad manifest is a clear error naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import manifest

from .conftest import REPO

GOOD = """
name = "demo"
title = "Demo"
runtime = "python"
package = "mcp"
entry = "adapter.py"
transports = ["stdio"]

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


@pytest.mark.parametrize(("text", "key", "problem"), [
    (GOOD.replace('runtime = "python"', 'runtime = "ruby"'), "runtime", "expected one of python, node"),
    (GOOD.replace('name = "demo"', 'name = "other"'), "name", "must equal the directory name"),
    (GOOD.replace('title = "Demo"\n', ""), "title", "missing"),
    (GOOD.replace('entry = "adapter.py"', 'entry = "nope.py"'), "entry", "does not exist"),
    (GOOD.replace('transports = ["stdio"]', 'transports = ["carrier-pigeon"]'), "transports", "unknown transport"),
    (GOOD.replace("list_tools = false", 'list_tools = "no"'), "variants.call-only.list_tools", "expected bool"),
    (GOOD.replace("list_tools = false", "max_buffer_bytes = 1.5"), "variants.call-only.max_buffer_bytes",
     "expected int"),
    (GOOD.replace("list_tools = false", "extra = [1, 2]"), "variants.call-only.extra", "options are scalars"),
    (GOOD.replace("[variants.call-only]", "[variants.Call_Only]"), "variants.Call_Only", "lowercase"),
    ("homepage = 'x'\n" + GOOD, "homepage", "unknown key"),
    (GOOD.split("[variants")[0], "variants", "at least one"),
])
def test_bad_manifest_names_file_and_key(tmp_path, text, key, problem):
    path = write(tmp_path, text)
    with pytest.raises(manifest.ManifestError) as error:
        manifest.load(path)
    message = str(error.value)
    assert message.startswith(f"{path}: {key}: ")
    assert problem in message


def test_invalid_toml_names_the_file(tmp_path):
    path = write(tmp_path, "name = ")
    with pytest.raises(manifest.ManifestError, match=r"adapter.toml: not valid TOML"):
        manifest.load(path)


def test_directory_without_manifest_is_an_error(tmp_path):
    (tmp_path / "stray").mkdir()
    (tmp_path / "_support").mkdir()
    with pytest.raises(manifest.ManifestError, match=r"stray/adapter.toml: missing"):
        manifest.discover(tmp_path)


def test_cli_reports_a_bad_manifest_without_a_traceback(checkout):
    scratch = checkout("raw-jsonrpc")
    broken = scratch.root / "clients" / "broken"
    broken.mkdir()
    (broken / "adapter.toml").write_text(GOOD.replace('name = "demo"', 'name = "broken"').replace(
        'runtime = "python"', "runtime = 3"))
    done = scratch.harness("run", "--run-id", "x", check=False)
    assert done.returncode == 2
    assert f"{broken / 'adapter.toml'}: runtime:" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (scratch.root / "results" / "x").exists(), "nothing is written for a run that cannot start"
