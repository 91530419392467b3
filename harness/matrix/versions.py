"""Versions as data: an adapter at another version of its package is a column of its own.

``run --with ts-sdk@1.29.0`` (or ``--adapter ts-sdk@1.29.0``; ``--with ts-sdk@1.29.0,1.30.0``
names several) runs the adapter ``ts-sdk`` with ``@modelcontextprotocol/sdk`` at 1.29.0 as the
column ``ts-sdk@1.29.0/<variant>``. The adapter's directory is copied to
``.envs/versions/<adapter>@<version>/<adapter>/`` (with ``_support`` beside it, a link to
``clients/_support``, as the adapters import it from there), and the copy's dependency file asks
for the package at that version, resolved as its users installed it when it came out: every
dependency as the registry had it a day after the version's release (``release.json``: the
release time from the registry, PyPI's JSON simple index or ``npm view``). A Python copy's
``requirements.txt`` is the package alone, installed with ``uv pip install --exclude-newer``; a
Node copy's ``package.json`` has the package at the version and the adapter's other dependencies
at ``*``, locked by ``npm install --package-lock-only --before`` (the lockfile stays in the copy).
Its environment is then built and cached like any other (:mod:`harness.prepare.environments`), and the
run's metadata records the version installed. The pinned adapters are unchanged; the docker
backend builds images of the pinned adapters only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.layout import Layout

from . import manifest

SPEC = re.compile(r"^(?P<adapter>[A-Za-z0-9][A-Za-z0-9._-]*)@(?P<versions>[0-9A-Za-z.+_,-]+)$")
VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+_-]*$")
SKIPPED = frozenset(("node_modules", "__pycache__", "package-lock.json", "release.json"))
"""What of an adapter's directory a versioned copy does not take (it gets its own)."""
RELEASE_FILE = "release.json"
"""In a versioned copy: the package, its version, when it was released, the resolution's cutoff."""
SETTLING = timedelta(days=1)
"""After a release, how long its dependencies' releases count as what its users installed."""
LOOKUP_TIMEOUT_S = 30.0
PYPI_SIMPLE = "https://pypi.org/simple"


@dataclass(frozen=True)
class Pin:
    """An adapter at one version of its package."""

    adapter: str
    version: str

    @property
    def name(self) -> str:
        return f"{self.adapter}@{self.version}"


def parse(text: str, flag: str = "--with") -> list[Pin]:
    """``ADAPTER@VERSION`` or ``ADAPTER@V1,V2,...``; :class:`UsageError` naming ``flag`` otherwise."""
    found = SPEC.match(text)
    versions = found.group("versions").split(",") if found else []
    if not found or not all(VERSION.match(version) for version in versions):
        raise UsageError(f"{flag} {text!r}: expected ADAPTER@VERSION (or ADAPTER@V1,V2,...), e.g. ts-sdk@1.29.0")
    return [Pin(found.group("adapter"), version) for version in versions]


def is_pinned_name(name: str) -> bool:
    """Whether an adapter name (or column) names an adapter at another version (``ts-sdk@1.29.0``)."""
    return "@" in name.split("/")[0]


def root(layout: Layout) -> Path:
    return layout.envs / "versions"


def is_versioned(layout: Layout, adapter: manifest.Adapter) -> bool:
    """Whether ``adapter`` is a versioned copy (:func:`derive`)."""
    return root(layout) in adapter.directory.parents


def _write_if_changed(path: Path, data: bytes) -> None:
    if not path.is_file() or path.read_bytes() != data:
        path.write_bytes(data)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _pypi_release(package: str, version: str) -> str:
    """When ``package`` ``version`` was uploaded to the index (PyPI's JSON simple API, PEP 700)."""
    index = (os.environ.get("UV_INDEX_URL") or os.environ.get("PIP_INDEX_URL") or PYPI_SIMPLE).rstrip("/")
    request = urllib.request.Request(
        f"{index}/{_normalized(package).replace('_', '-')}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=LOOKUP_TIMEOUT_S) as answer:
        files = json.load(answer).get("files", [])
    named = re.compile(rf"^(.+?)-{re.escape(version)}(?:-.+\.whl|\.tar\.gz|\.zip)$")
    times = []
    for entry in files:
        match = named.match(str(entry.get("filename", "")))
        if match and _normalized(match.group(1)) == _normalized(package) and entry.get("upload-time"):
            times.append(str(entry["upload-time"]))
    if not times:
        raise LookupError(f"the index has no files of {package} {version}")
    return min(times)


def _npm_release(package: str, version: str, directory: Path, env: dict[str, str]) -> str:
    npm = shutil.which("npm", path=env.get("PATH"))
    if npm is None:
        raise LookupError("npm is not on PATH")
    done = subprocess.run(
        [npm, "view", f"{package}@{version}", "time", "--json"],
        cwd=directory, env=env, capture_output=True, text=True, timeout=LOOKUP_TIMEOUT_S,
    )  # fmt: skip
    times: dict[str, Any] = json.loads(done.stdout or "{}") if done.returncode == 0 else {}
    if not isinstance(times, dict) or version not in times:
        raise LookupError(f"the registry has no {package}@{version}")
    return str(times[version])


def release(home: Path, adapter: manifest.Adapter, version: str, env: dict[str, str]) -> dict[str, str]:
    """``release.json`` of a versioned copy: looked up once from the registry, then kept."""
    path = home / RELEASE_FILE
    if path.is_file():
        kept: dict[str, str] = json.loads(path.read_text())
        if kept.get("package") == adapter.package and kept.get("version") == version:
            return kept
    try:
        if adapter.runtime == "python":
            released = _pypi_release(adapter.package, version)
        else:
            released = _npm_release(adapter.package, version, adapter.directory, env)
    except (OSError, ValueError, LookupError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"{adapter.name}@{version}: cannot find {adapter.package} {version}: {exc}") from None
    cutoff = datetime.fromisoformat(released.replace("Z", "+00:00")) + SETTLING
    found = {
        "package": adapter.package,
        "version": version,
        "released": released,
        "resolved_before": cutoff.isoformat(),
    }
    path.write_text(json.dumps(found, indent=2) + "\n")
    return found


def derive(layout: Layout, base: manifest.Adapter, version: str, env: dict[str, str]) -> manifest.Adapter:
    """``base`` at ``version`` of its package: its versioned copy, refreshed, loaded as an adapter
    (``env``: the environment ``npm`` runs in, for a Node adapter's release lookup)."""
    pin = Pin(base.name, version)
    if base.broken:
        raise UsageError(f"{pin.name}: the adapter {base.name} is broken: {base.broken}")
    if not base.package:
        raise UsageError(f"{pin.name}: {base.name} installs no package to pin (adapter.toml has no 'package')")
    if base.runtime not in ("python", "node"):
        raise UsageError(
            f"{pin.name}: {base.name} is a {base.runtime} adapter; versions as data cover Python and Node "
            "adapters (pin another release in its lockfile instead)"
        )
    home = root(layout) / pin.name
    target = home / base.name
    target.mkdir(parents=True, exist_ok=True)
    found = release(home, base, version, env)
    support = home / "_support"
    if not support.is_symlink():
        support.symlink_to(layout.support.resolve(), target_is_directory=True)
    for source in sorted(base.directory.iterdir()):
        if source.name in SKIPPED or source.name.startswith("."):
            continue
        if source.is_dir():
            shutil.copytree(source, target / source.name, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*SKIPPED))
            continue
        data = source.read_bytes()
        if source.name == "requirements.txt":
            data = (
                f"# {base.package}=={version} as its users installed it: resolved by the harness with\n"
                f"# uv pip install --exclude-newer {found['resolved_before']} (harness/matrix/versions.py)\n"
                f"{base.package}=={version}\n"
            ).encode()
        elif source.name == "package.json":
            package_json = json.loads(data)
            dependencies = {name: "*" for name in package_json.get("dependencies", {})}
            package_json["dependencies"] = {**dependencies, base.package: version}
            data = (json.dumps(package_json, indent=2) + "\n").encode("utf-8")
        _write_if_changed(target / source.name, data)
    adapter = manifest.load(target / "adapter.toml")
    return dataclasses.replace(adapter, name=pin.name, title=f"{adapter.title} at {version}")


def resolved_before(adapter: manifest.Adapter) -> str:
    """The cutoff a versioned copy's dependencies are resolved at (its ``release.json``)."""
    kept: dict[str, str] = json.loads((adapter.directory.parent / RELEASE_FILE).read_text())
    return kept["resolved_before"]
