"""Build the example servers from the registries (exact pins), cached by their lock files.

    python servers/examples/build.py            # builds both, prints how to start each

The examples are MCP servers as their users write them, not the reference server: one with the
official Python SDK (``python-inventory``: ``mcp`` 2.x ``MCPServer``), one with the TypeScript
SDK (``ts-inventory``: ``McpServer``), each with one tool that has an outputSchema. They are what
``python -m harness record`` is shown on (README) and tested with.

``python-inventory`` gets a venv in ``.envs/examples/python-inventory`` (``uv`` when it is beside
this interpreter or on PATH, else ``venv`` and ``pip``) from ``requirements.txt``;
``ts-inventory`` gets ``npm ci`` from ``package-lock.json``. Either is rebuilt only when its
lock file changed. Standard library only.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
STAMP = ".mcpcm-example-stamp"
TIMEOUT_S = 600


def _fingerprint(lock: Path) -> str:
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        raise SystemExit(f"examples: {' '.join(command[:3])} ... failed: {tail[0]}")


def python_inventory() -> list[str]:
    """Build the Python example's venv (if needed); its stdio command line."""
    directory = HERE / "python-inventory"
    lock = directory / "requirements.txt"
    env = ROOT / ".envs" / "examples" / "python-inventory"
    python = env / "bin" / "python"
    stamp = env / STAMP
    if not (stamp.is_file() and stamp.read_text() == _fingerprint(lock)):
        if env.exists():
            shutil.rmtree(env)
        uv = Path(sys.executable).parent / "uv"
        installer = str(uv) if uv.is_file() else shutil.which("uv")
        if installer:
            _run([installer, "venv", "--quiet", "--python", sys.executable, str(env)], directory)
            _run([installer, "pip", "install", "--quiet", "--python", str(python), "-r", str(lock)], directory)
        else:
            _run([sys.executable, "-m", "venv", str(env)], directory)
            _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r", str(lock)], directory)
        stamp.write_text(_fingerprint(lock))
    return [str(python), str(directory / "server.py")]


def ts_inventory() -> list[str]:
    """``npm ci`` for the TypeScript example (if needed); its stdio command line."""
    directory = HERE / "ts-inventory"
    lock = directory / "package-lock.json"
    stamp = directory / "node_modules" / STAMP
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise SystemExit("examples: node and npm must be on PATH for ts-inventory")
    if not (stamp.is_file() and stamp.read_text() == _fingerprint(lock)):
        _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], directory)
        stamp.write_text(_fingerprint(lock))
    return [node, str(directory / "server.mjs")]


EXAMPLES = {"python-inventory": python_inventory, "ts-inventory": ts_inventory}


def main(names: list[str]) -> int:
    for name in names or list(EXAMPLES):
        if name not in EXAMPLES:
            raise SystemExit(f"examples: unknown example {name!r} (known: {', '.join(EXAMPLES)})")
        command = EXAMPLES[name]()
        print(f"{name}: {' '.join(command)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
