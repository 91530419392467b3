"""Loopback only: run a command in a new network namespace whose one interface, ``lo``, is up.

An agent host cell runs this way (``command``), so that a host which tries to reach the network
(telemetry, update checks, a model API it was not pointed at) fails inside its cell and never
leaves the machine, while the scripted model and the reference server on 127.0.0.1 stay reachable.
``unshare --net --map-root-user`` (util-linux) makes the namespace (an unprivileged user namespace
when not root); this file, run inside it, brings ``lo`` up with one ioctl and execs the command.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import socket
import struct
import subprocess
import sys
from pathlib import Path

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
CHECK_TIMEOUT_S = 10.0


class LoopbackUnavailable(RuntimeError):
    """No loopback-only namespace can be made here; the message says why and what to do."""


def command(argv: list[str]) -> list[str]:
    """``argv`` run in its own network namespace with only ``lo`` up."""
    unshare = shutil.which("unshare") or "unshare"
    return [unshare, "--net", "--map-root-user", sys.executable, "-S", str(Path(__file__).resolve()), *argv]


@functools.cache
def check() -> None:
    """Make a namespace and try the network from inside it: loopback must work, anything else must not.
    Once per process when it passes (every host adapter's prepare asks)."""
    if shutil.which("unshare") is None:
        raise LoopbackUnavailable("`unshare` (util-linux) is not on PATH: agent hosts run in a loopback-only namespace")
    probe = [sys.executable, "-S", "-c", _PROBE]
    try:
        done = subprocess.run(command(probe), capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LoopbackUnavailable(f"unshare --net --map-root-user: {exc}") from exc
    if done.returncode != 0 or done.stdout.strip() != "loopback ok, network unreachable":
        said = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        raise LoopbackUnavailable(f"unshare --net --map-root-user: {said[0]} (user namespaces may be disabled)")


_PROBE = """
import socket
server = socket.create_server(("127.0.0.1", 0))
socket.create_connection(server.getsockname(), timeout=2).close()
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2).close()
    print("network reachable")
except OSError:
    print("loopback ok, network unreachable")
"""


def _up(interface: bytes) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", interface, 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", interface, flags | IFF_UP))


def main(argv: list[str]) -> None:
    if not argv:
        print("usage: loopback.py COMMAND [ARG...] (inside unshare --net)", file=sys.stderr)
        sys.exit(2)
    try:
        _up(b"lo")
    except OSError as exc:
        print(f"loopback: cannot bring lo up: {exc}", file=sys.stderr)
        sys.exit(125)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"loopback: cannot run {argv[0]}: {exc}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
