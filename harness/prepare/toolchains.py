"""Compiled adapters (runtimes ``go``, ``rust``, ``java``): the toolchain each needs, how its adapter is
built once into ``.envs/<name>/``, the command that runs a cell, and the client version compiled in.

An adapter of a compiled runtime is a Go module, a Cargo package or a Maven project in its directory
(docs/adapters.md, *Compiled adapters*). ``prepare`` builds it with the toolchain on PATH, with the
dependencies its lockfile pins (``go.sum``, ``Cargo.lock``, exact Maven versions); afterwards a cell
needs no network and no build: a Go or Rust binary, or a jar with its dependencies beside it.
The build is cached by a fingerprint of the adapter directory's files and the toolchain's versions.
A missing toolchain is a :class:`PrepareError` naming what to install: that column's cells are
harness errors and the rest of the matrix runs.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.errors import PrepareError
from harness.matrix.manifest import Adapter

COMPILED = ("go", "rust", "java")
"""The runtimes whose adapters are built by :func:`build_command` rather than installed."""

BUILD_OUTPUTS = frozenset({"target", "build", "node_modules", "__pycache__", ".mcpcm-stamp"})
"""Directory entries of an adapter that are build products, never sources (left out of the fingerprint)."""

JAVA_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
"""How a Java adapter's JVM starts on the host's ``java``: a cell is a short run, so the cheapest
collector and the client compiler only (neither changes what the program does, only how fast it
starts)."""
PINNED_JAVA_OPTIONS = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:CICompilerCount=1",
    "-XX:-UsePerfData",
    "-XX:Tier3InvocationThreshold=2000",
    "-XX:Tier3MinInvocationThreshold=1000",
    "-XX:Tier3CompileThreshold=20000",
    "-XX:Tier3BackEdgeThreshold=600000",
)
"""How a Java adapter's JVM starts on its pinned JDK (``jdk`` in the manifest,
:mod:`harness.prepare.jdk_releases`), with its ahead-of-time cache: as :data:`JAVA_OPTIONS`, with one
compiler thread, no performance counters file, and methods compiled after ten times as many calls
and loops as by default. A cell's control-case call runs a few thousand methods a handful of times
each, and with the cache's classes already loaded and linked, compiling them cost more than it
saved; a hot loop (a 10 MiB frame read) is still compiled within its first milliseconds
(docs/benchmarks.md)."""


@dataclass(frozen=True)
class Toolchain:
    """What a compiled runtime needs on the host."""

    tools: tuple[str, ...]
    """Executables that must be on PATH to build (and, for Java, to run) an adapter."""
    install: str
    """What to install when one is missing (the harness-error message of the column)."""
    versions: tuple[tuple[str, tuple[str, ...], str], ...]
    """(name, command, pattern): each tool's version, the pattern's first group of its output."""


TOOLCHAINS: dict[str, Toolchain] = {
    "go": Toolchain(
        ("go",),
        "Go >= 1.23 (the `go` command; the Go adapters' modules come from the Go module proxy)",
        (("go", ("go", "env", "GOVERSION"), r"go(\S+)"),),
    ),
    "rust": Toolchain(
        ("cargo", "rustc"),
        "Rust >= 1.85 with Cargo (`cargo` and `rustc`; the crates come from crates.io)",
        (("rustc", ("rustc", "--version"), r"rustc (\S+)"), ("cargo", ("cargo", "--version"), r"cargo (\S+)")),
    ),
    "java": Toolchain(
        ("java", "mvn"),
        "a JDK >= 17 and Maven 3 (`java` and `mvn`; the artifacts come from Maven Central)",
        (
            ("java", ("java", "-XshowSettings:properties", "-version"), r"java\.version = (\S+)"),
            ("mvn", ("mvn", "--version"), r"Apache Maven ([0-9][0-9A-Za-z.\-]*)"),
        ),
    ),
}


def missing_tools(runtime: str) -> list[str]:
    """The executables of ``runtime``'s toolchain that are not on PATH."""
    return [tool for tool in TOOLCHAINS[runtime].tools if shutil.which(tool) is None]


def require(adapter: Adapter) -> None:
    """:class:`PrepareError` naming what to install when the adapter's toolchain is incomplete."""
    absent = missing_tools(adapter.runtime)
    if absent:
        names = ", ".join(f"`{tool}`" for tool in absent)
        raise PrepareError(
            f"{adapter.name}: {names} not on PATH; install {TOOLCHAINS[adapter.runtime].install} to build this column"
        )


@functools.cache
def versions(runtime: str) -> dict[str, str]:
    """Each tool of ``runtime``'s toolchain and its version (``{}`` for a tool that is missing)."""
    found: dict[str, str] = {}
    for name, command, pattern in TOOLCHAINS[runtime].versions:
        if shutil.which(command[0]) is None:
            continue
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        match = re.search(pattern, done.stdout + done.stderr)
        if match:
            found[name] = match.group(1)
    return found


def runtime_version(runtime: str) -> str | None:
    """The version an adapter of ``runtime`` records as its runtime: ``go1.26.8``, ``rustc 1.95.0``,
    ``17.0.15`` (the JVM); None without the toolchain."""
    tools = versions(runtime)
    if runtime == "go":
        return f"go{tools['go']}" if "go" in tools else None
    if runtime == "rust":
        return f"rustc {tools['rustc']}" if "rustc" in tools else None
    return tools.get("java")


def host_toolchains() -> dict[str, str]:
    """Every compiled runtime's tools found on this host, with their versions (run metadata)."""
    return {name: version for runtime in COMPILED for name, version in versions(runtime).items()}


def support_directory(adapter: Adapter) -> Path:
    """The support code the adapters of one compiled runtime share (``clients/_support/go``: a Go
    module that their ``go.mod`` replaces a module path with); part of every such adapter's build."""
    return adapter.directory.parent / "_support" / adapter.runtime


def sources(directory: Path) -> Iterator[Path]:
    """The adapter's own files, build products left out (never walked into), in a stable order."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(directory):
        subfolders[:] = [name for name in subfolders if name not in BUILD_OUTPUTS]
        found.extend(Path(folder, name) for name in files if name not in BUILD_OUTPUTS)
    yield from sorted(path for path in found if path.is_file())


def build_command(adapter: Adapter, env_dir: Path) -> tuple[list[str], dict[str, str]]:
    """The command (run in the adapter directory) that builds the adapter into ``env_dir``, and the
    variables it adds to the environment."""
    if adapter.runtime == "go":
        # GOTOOLCHAIN=local: never download another Go; -mod=readonly: go.sum must already pin everything.
        env = {"GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly", "CGO_ENABLED": "0"}
        return ["go", "build", "-trimpath", "-o", str(env_dir / "adapter"), "."], env
    if adapter.runtime == "rust":
        jobs = str(min(2, os.cpu_count() or 1))
        command = ["cargo", "build", "--release", "--locked", "--jobs", jobs, "--target-dir", str(env_dir / "target")]
        return command, {"CARGO_TERM_COLOR": "never"}
    if adapter.runtime == "java":
        return ["mvn", "-B", "-q", "-DskipTests", "package", f"-Dmcpcm.build={env_dir / 'build'}"], {}
    raise ValueError(f"{adapter.runtime!r} is not a compiled runtime")


def artifact(adapter: Adapter, env_dir: Path) -> Path:
    """What the build leaves: the binary, or the jar (its dependencies in ``lib/`` beside it)."""
    return {
        "go": env_dir / "adapter",
        "rust": env_dir / "target" / "release" / "adapter",
        "java": env_dir / "build" / "adapter.jar",
    }[adapter.runtime]


def built_files(adapter: Adapter, env_dir: Path) -> list[Path]:
    """Every file a cell runs from: the artifact, and a jar's dependencies in ``lib/`` beside it."""
    built = artifact(adapter, env_dir)
    return [built, *sorted((built.parent / "lib").glob("*.jar"))] if adapter.runtime == "java" else [built]


def run_command(
    adapter: Adapter,
    env_dir: Path,
    *,
    java: Path | None = None,
    archive: Path | None = None,
    jvm_options: tuple[str, ...] = (),
) -> list[str]:
    """The start of a cell's command line (the cell file and the observation path follow). A Java
    adapter runs on the host's ``java`` with :data:`JAVA_OPTIONS` (``java`` None: it pins no JDK, or
    in a container) or on its pinned JDK's ``java`` with :data:`PINNED_JAVA_OPTIONS`, mapping the
    ahead-of-time cache ``archive`` (:mod:`harness.prepare.aot_cache`); ``jvm_options`` last."""
    built = artifact(adapter, env_dir)
    if adapter.runtime != "java":
        return [str(built)]
    if java is None:
        return ["java", *JAVA_OPTIONS, *jvm_options, "-jar", str(built)]
    cached = [f"-XX:AOTCache={archive}"] if archive else []
    return [str(java), *PINNED_JAVA_OPTIONS, *cached, *jvm_options, "-jar", str(built)]


def installed_version(adapter: Adapter, env_dir: Path) -> str | None:
    """The version of the adapter's package that was compiled in, read from the build itself: the Go
    binary's build information, the ``Cargo.lock`` the build was locked to, the jar's Maven properties."""
    built = artifact(adapter, env_dir)
    if not adapter.package or not built.is_file():
        return None
    if adapter.runtime == "go":
        return _go_dependency(built, adapter.package)
    if adapter.runtime == "rust":
        return _locked_crate(adapter.directory / "Cargo.lock", adapter.package)
    return _maven_version(built.parent / "lib", adapter.package)


def _go_dependency(binary: Path, module: str) -> str | None:
    if shutil.which("go") is None:
        return None
    done = subprocess.run(["go", "version", "-m", str(binary)], capture_output=True, text=True, timeout=60)
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0] == "dep" and fields[1] == module:
            return fields[2].removeprefix("v")
    return None


def _locked_crate(lock: Path, crate: str) -> str | None:
    try:
        packages = tomllib.loads(lock.read_text(encoding="utf-8")).get("package", [])
    except (OSError, ValueError):
        return None
    found = [str(p["version"]) for p in packages if isinstance(p, dict) and p.get("name") == crate]
    return found[0] if len(found) == 1 else None


def _maven_version(lib: Path, coordinates: str) -> str | None:
    """The artifact's version from its jar's Maven properties; a jar published by Gradle has none,
    then the version Maven named the copied jar by (``<artifactId>-<version>.jar``)."""
    group, _, name = coordinates.partition(":")
    entry = f"META-INF/maven/{group}/{name}/pom.properties"
    named = re.compile(rf"^{re.escape(name)}-(\d[^/]*)\.jar$")
    for jar in sorted(lib.glob(f"{name}-*.jar")):
        match = named.match(jar.name)
        if match is None:
            continue
        try:
            with zipfile.ZipFile(jar) as archive:
                text = archive.read(entry).decode("utf-8", "replace")
        except KeyError:
            return match.group(1)
        except (OSError, zipfile.BadZipFile):
            continue
        for line in text.splitlines():
            if line.startswith("version="):
                return line.partition("=")[2].strip()
        return match.group(1)
    return None
