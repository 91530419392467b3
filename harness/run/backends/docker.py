"""The docker backend: each cell's adapter runs in a fresh container of the adapter's image.

- The image (:mod:`harness.prepare.images`) holds the adapter, its pinned dependencies, its runtime and
  ``python3``; the reference server is not in it but mounted read-only at
  ``/mcpcm/servers/reference``, and the cell directory read-write at ``/mcpcm/cell`` (the cell
  file, the journal and the observation live there, as for the local backend).
- stdio cells: the adapter spawns the reference server inside its container, so stdio is a real
  pipe between two processes; the container has no network (``network_mode="none"``).
- HTTP cells: the reference server runs in a container of its own with no network but loopback,
  and the adapter's container joins that network namespace (``network_mode="container:<id>"``):
  a private network of exactly two containers, in which the client reaches the server at
  ``127.0.0.1`` as it does with the local backend (the same URL, the same ``Host`` header, so the
  server's DNS-rebinding checks apply unchanged) and nothing else reaches either of them.
- Bounds: the adapter container is waited for at most the cell budget, then killed; every
  container the backend starts is removed when its cell ends, and :meth:`DockerBackend.close`
  removes any left by an interruption (they carry the backend's owner label). A run killed
  outright (its engine with it) cannot clean up, so a new backend first removes the containers of
  owners on this host whose process is gone (:func:`orphaned`). Containers run
  with ``init`` (signals are forwarded, orphans reaped) as the invoking user, so the files they
  write in ``results/`` belong to that user.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from harness.errors import PrepareError
from harness.layout import CELL_FILE, RAW_OBSERVATION_FILE, CellFiles, Layout
from harness.matrix.cells import Cell
from harness.matrix.manifest import Adapter
from harness.prepare import images, toolchains
from harness.system.process import Finished, ServiceError
from harness.system.reference_server import READY_S, parse_url_line

SERVER_DIR = Path("/mcpcm/servers/reference")
CELL_DIR = Path("/mcpcm/cell")
CONTAINER_PYTHON = "/usr/bin/python3"
"""The interpreter that runs the reference server in every image (Debian's python3)."""
IMAGE_ENV = Path("/mcpcm/env")
"""Where an image holds the adapter's environment: a Python venv, or a compiled adapter's build."""
STOP_GRACE_S = 2


def _owner_alive(owner: str) -> bool:
    """Whether the harness process named by an owner label (``<pid>-<nonce>``) still runs here."""
    pid, _, _ = owner.partition("-")
    if not pid.isdigit():
        return True  # not a label this backend wrote: leave it alone
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user has that pid
        return True
    return True


def _local_only(adapter: Adapter) -> None:
    if adapter.kind == "host":
        raise PrepareError(f"{adapter.name}: agent hosts run on the local backend only (docs/hosts.md)")


def orphaned(containers: list[Any], host: str) -> list[Any]:
    """The containers whose owning harness process on ``host`` is gone.

    Owners on other hosts sharing the engine are never touched; containers from before the host
    label count as this host's.
    """
    return [
        c
        for c in containers
        if c.labels.get(f"{images.LABEL}.host", host) == host
        and not _owner_alive(c.labels.get(f"{images.LABEL}.owner", ""))
    ]


def _start_of(adapter: Adapter) -> list[str]:
    """A cell's command line in the adapter's image, up to the cell file."""
    if adapter.runtime in toolchains.COMPILED:
        return toolchains.run_command(adapter, IMAGE_ENV)
    interpreter = str(IMAGE_ENV / "bin" / "python") if adapter.runtime == "python" else "/usr/local/bin/node"
    return [interpreter, f"/mcpcm/clients/{adapter.name}/{adapter.entry}"]


class DockerBackend:
    name = "docker"

    def __init__(
        self, layout: Layout, *, base_image: str = images.DEFAULT_BASE_IMAGE, ca_bundle: Path | None = None
    ) -> None:
        self.layout = layout
        self.base_image = base_image
        self.ca_bundle = ca_bundle
        self.client = images.client()
        self.owner = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.host = socket.gethostname()
        self._images: dict[str, images.Image] = {}
        self._live: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._remove_orphans()

    # -- images -------------------------------------------------------------------------------

    def prepare(self, adapter: Adapter) -> bool:
        _local_only(adapter)
        image, built = images.build(
            self.layout,
            adapter,
            base_image=self.base_image,
            ca_bundle=self.ca_bundle,
            log=self.layout.envs / "docker" / f"{adapter.name}.log",
        )
        self._images[adapter.name] = image
        return built

    def check(self, adapter: Adapter) -> None:
        _local_only(adapter)
        self._images[adapter.name] = images.find(self.client, self.layout, adapter)

    def inputs(self, adapter: Adapter) -> str:
        """The image's id (what it was built from, its base image included); none when it was never built."""
        try:
            return f"image {self._image(adapter).id}"
        except PrepareError as exc:
            return f"no image: {exc}"

    def _image(self, adapter: Adapter) -> images.Image:
        if adapter.name not in self._images:
            self.check(adapter)
        return self._images[adapter.name]

    # -- containers ---------------------------------------------------------------------------

    def _start(
        self,
        image: images.Image,
        command: list[str],
        *,
        directory: Path,
        network_mode: str,
        working_dir: str | None = None,
        environment: dict[str, str] | None = None,
    ) -> Any:
        container = self.client.containers.create(
            image.id,
            command,
            working_dir=working_dir,
            environment=environment or {},
            network_mode=network_mode,
            init=True,
            user=f"{os.getuid()}:{os.getgid()}",
            volumes={
                str(self.layout.server.resolve()): {"bind": str(SERVER_DIR), "mode": "ro"},
                str(directory): {"bind": str(CELL_DIR), "mode": "rw"},
            },
            labels={
                f"{images.LABEL}.owner": self.owner,
                f"{images.LABEL}.host": self.host,
                f"{images.LABEL}.cell": str(directory),
            },
        )
        with self._lock:
            self._live[container.id] = container
        container.start()
        return container

    def _remove_orphans(self) -> None:
        owned = self.client.containers.list(all=True, filters={"label": f"{images.LABEL}.owner"})
        for container in orphaned(owned, self.host):
            self._remove(container)

    def _remove(self, container: Any) -> None:
        try:
            container.remove(force=True)
        except Exception:  # already gone (an interruption removed it)
            pass
        with self._lock:
            self._live.pop(container.id, None)

    def _start_server(self, image: images.Image, cell: Cell, files: CellFiles) -> tuple[Any, str]:
        server = self._start(
            image,
            [CONTAINER_PYTHON, *cell.server_args(SERVER_DIR, CELL_DIR)],
            directory=files.directory,
            network_mode="none",
        )
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            line = server.logs(stdout=True, stderr=False).decode("utf-8", "replace").strip()
            if line:
                return server, parse_url_line(line.splitlines()[0])
            server.reload()
            if server.status == "exited":
                break
            time.sleep(0.05)
        self._stop_server(server, files)
        raise ServiceError(f"reference server container printed nothing within {READY_S} s; see {files.server_stderr}")

    def _stop_server(self, server: Any, files: CellFiles) -> None:
        """SIGTERM (so the server journals its exit), then kill; keep its stderr; remove it."""
        try:
            server.stop(timeout=STOP_GRACE_S)
            files.server_stderr.write_bytes(server.logs(stdout=False, stderr=True))
        finally:
            self._remove(server)

    def run(self, cell: Cell, files: CellFiles) -> Finished:
        image = self._image(cell.adapter)
        server, url = self._start_server(image, cell, files) if cell.is_http else (None, None)
        try:
            files.cell.write_text(
                json.dumps(cell.to_file(SERVER_DIR, CELL_DIR, url, python=CONTAINER_PYTHON), indent=2)
            )
            home = f"/mcpcm/clients/{cell.adapter.name}"
            command = [*_start_of(cell.adapter), str(CELL_DIR / CELL_FILE), str(CELL_DIR / RAW_OBSERVATION_FILE)]
            started = time.monotonic()
            adapter = self._start(
                image,
                command,
                directory=files.directory,
                working_dir=home,
                network_mode=f"container:{server.id}" if server is not None else "none",
                environment={"PYTHONPATH": "/mcpcm/clients/_support", "PYTHONUNBUFFERED": "1", "HOME": "/tmp"},
            )
            try:
                exit_code: int | None
                try:
                    exit_code = int(adapter.wait(timeout=cell.budget_s)["StatusCode"])
                    timed_out = False
                except Exception:  # requests' ReadTimeout / ConnectionError: the budget ran out
                    exit_code, timed_out = None, True
                    adapter.kill()
                wall_ms = round((time.monotonic() - started) * 1000, 1)
                files.stdout.write_bytes(adapter.logs(stdout=True, stderr=False))
                files.stderr.write_bytes(adapter.logs(stdout=False, stderr=True))
            finally:
                self._remove(adapter)
        finally:
            if server is not None:
                self._stop_server(server, files)
        return Finished(exit_code=exit_code, timed_out=timed_out, wall_ms=wall_ms, stragglers_killed=0)

    def kill_all(self) -> None:
        with self._lock:
            live = list(self._live.values())
        for container in live:
            try:
                container.kill()
            except Exception:
                pass

    # -- run metadata and cleanup ---------------------------------------------------------------

    def describe(self, adapters: list[Adapter]) -> dict[str, Any]:
        described: dict[str, Any] = {}
        for adapter in adapters:
            try:
                image = self._image(adapter)
            except PrepareError:
                continue
            described[adapter.name] = {
                **images.versions(self.layout, self.client, image, adapter),
                "image": image.tag,
                "image_id": image.id,
                "base_image": image.base_image,
                "node_release": adapter.node,
                "isolation": self.isolation_of(adapter),
            }
        return {"backend": self.name, "adapters": described}

    def isolation_of(self, adapter: Adapter) -> str:
        return "container"

    def server_start(self) -> str:
        return "container"

    def close(self) -> None:
        left = self.client.containers.list(all=True, filters={"label": f"{images.LABEL}.owner={self.owner}"})
        for container in left:
            self._remove(container)
