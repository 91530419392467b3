"""Run the official MCP conformance suite's server scenarios against the reference server.

    python servers/conformance/run.py --output servers/conformance/last-result.json

Needs ``npm ci`` in this directory first (``nox -s conformance`` does it). Starts
``python servers/reference --case conformance --transport http-sse --port 0`` on 127.0.0.1, runs
each selected scenario with the pinned CLI (``conformance server --url URL --scenario NAME``, one
process per scenario so that one scenario cannot spoil the next), stops the server with SIGTERM
and writes one JSON document to ``--output``::

    {"conformance": {"package": "@modelcontextprotocol/conformance", "version": "0.1.16"},
     "node": "v22...", "server": {...}, "passed": true, "counts": {...},
     "scenarios": [{"name": "tools-list", "group": "tools", "passed": true, "exit_code": 0,
                    "duration_s": 0.9, "checks": [{"id": ..., "status": "SUCCESS", ...}]}, ...]}

Groups: ``tools`` (every server scenario of the suite named ``tools-*``: the required ones),
``tools-extra`` (scenarios that list or call tools for a SEP: JSON Schema 2020-12, elicitation
defaults and enums) and ``transport`` (initialize, ping, logging level, DNS-rebinding protection).
Exit status: 0 when every selected scenario passed, 1 when one failed, 2 when the check could not
run at all. Standard library only; no network but loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SERVER = REPO / "servers" / "reference"
PACKAGE = "@modelcontextprotocol/conformance"
PACKAGE_DIR = HERE / "node_modules" / "@modelcontextprotocol" / "conformance"
CLI = PACKAGE_DIR / "dist" / "index.js"
MIN_NODE_MAJOR = 22  # the suite imports fs.globSync (Node >= 22)

EXTRA_TOOLS = ("json-schema-2020-12", "elicitation-sep1034-defaults", "elicitation-sep1330-enums")
TRANSPORT = ("server-initialize", "ping", "logging-set-level", "dns-rebinding-protection")
GROUPS = ("tools", "tools-extra", "transport")
SCENARIO_TIMEOUT_S = 120.0
URL_TIMEOUT_S = 15.0


class CannotRun(Exception):
    """The check cannot run (no npm ci, no suitable node, the server did not start)."""


def node_binary() -> tuple[str, str]:
    """The node to run the suite with: the pinned Node 22 package, else a new enough system node."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    candidates = []
    if sys.platform.startswith("linux") and arch:
        candidates.append(str(HERE / "node_modules" / f"node-linux-{arch}" / "bin" / "node"))
    system = shutil.which("node")
    if system:
        candidates.append(system)
    for candidate in candidates:
        if not os.access(candidate, os.X_OK):
            continue
        version = subprocess.run([candidate, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        try:
            major = int(version.lstrip("v").split(".")[0])
        except ValueError:
            continue
        if major >= MIN_NODE_MAJOR:
            return candidate, version
    raise CannotRun(f"no Node >= {MIN_NODE_MAJOR} found (run `npm ci` in {HERE} on Linux, or install Node 22+)")


def conformance_version() -> str:
    manifest = PACKAGE_DIR / "package.json"
    if not manifest.is_file():
        raise CannotRun(f"{PACKAGE} is not installed: run `npm ci` in {HERE}")
    return json.loads(manifest.read_text(encoding="utf-8"))["version"]


def server_scenarios(node: str) -> list[str]:
    """Every server scenario the installed CLI knows, in its order."""
    done = subprocess.run([node, str(CLI), "list", "--server"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise CannotRun(f"`conformance list --server` failed: {done.stderr.strip()[-2000:]}")
    names = []
    for line in done.stdout.splitlines():
        line = line.strip()
        if line.startswith("- "):
            names.append(line[2:].split()[0])
    return names


def select(known: list[str], groups: list[str], names: list[str]) -> list[tuple[str, str]]:
    """(scenario, group) pairs to run: explicit names, else the chosen groups."""

    def group_of(name: str) -> str:
        if name.startswith("tools-"):
            return "tools"
        if name in EXTRA_TOOLS:
            return "tools-extra"
        if name in TRANSPORT:
            return "transport"
        return "other"

    if names:
        unknown = [name for name in names if name not in known]
        if unknown:
            raise CannotRun(f"unknown scenario(s) {unknown}; the suite has {known}")
        return [(name, group_of(name)) for name in names]
    chosen = [(name, group_of(name)) for name in known if group_of(name) in groups]
    missing = [name for name in (*EXTRA_TOOLS, *TRANSPORT) if group_of(name) in groups and name not in known]
    if missing:
        raise CannotRun(f"scenario(s) {missing} are not in this version of the suite")
    if "tools" in groups and not any(group == "tools" for _, group in chosen):
        raise CannotRun("the suite lists no tools-* server scenario")
    return chosen


def start_server(transport: str, journal: Path) -> tuple[subprocess.Popen[str], str]:
    """Start the reference server in conformance mode; returns it and its URL."""
    process = subprocess.Popen(
        [
            sys.executable,
            str(SERVER),
            "--case",
            "conformance",
            "--transport",
            transport,
            "--port",
            "0",
            "--journal",
            str(journal),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + URL_TIMEOUT_S
    assert process.stdout is not None
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=0.2):
                line = process.stdout.readline()
                if line:
                    return process, json.loads(line)["url"]
            if process.poll() is not None:
                break
    stop_server(process)
    stderr = process.stderr.read() if process.stderr else ""
    raise CannotRun(f"the reference server printed no URL: {stderr.strip()[-2000:]}")


def stop_server(process: subprocess.Popen[str]) -> int | None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def run_scenario(node: str, url: str, name: str, workdir: Path) -> dict[str, Any]:
    out_dir = workdir / name
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [node, str(CLI), "server", "--url", url, "--scenario", name, "-o", str(out_dir)],
            capture_output=True,
            text=True,
            timeout=SCENARIO_TIMEOUT_S,
            cwd=workdir,
        )
        exit_code, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        exit_code, stdout, stderr = None, str(exc.stdout or ""), f"timed out after {SCENARIO_TIMEOUT_S} s"
    duration = round(time.monotonic() - started, 3)
    checks: list[dict[str, Any]] = []
    for path in sorted(out_dir.rglob("checks.json")):
        checks.extend(json.loads(path.read_text(encoding="utf-8")))
    statuses = [check.get("status") for check in checks]
    passed = exit_code == 0 and "SUCCESS" in statuses and "FAILURE" not in statuses
    return {
        "name": name,
        "passed": passed,
        "exit_code": exit_code,
        "duration_s": duration,
        "checks": [
            {key: check.get(key) for key in ("id", "name", "status", "errorMessage") if key in check}
            for check in checks
        ],
        "output_tail": None if passed else (stdout[-3000:] + stderr[-3000:]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="write the machine-readable result here (JSON)")
    parser.add_argument("--transport", default="http-sse", choices=("http-sse", "http-json"))
    parser.add_argument(
        "--group", action="append", choices=GROUPS, help="scenario group to run (repeatable; default: all groups)"
    )
    parser.add_argument("--scenario", action="append", default=[], help="run only this scenario (repeatable)")
    parser.add_argument("--journal", default=None, help="keep the server's journal here")
    args = parser.parse_args(argv)
    output = Path(args.output).resolve()

    try:
        version = conformance_version()
        node, node_version = node_binary()
        chosen = select(server_scenarios(node), args.group or list(GROUPS), args.scenario)
    except CannotRun as exc:
        print(f"conformance: cannot run: {exc}", file=sys.stderr)
        return 2
    print(
        f"conformance: {PACKAGE} {version} (node {node_version}), {len(chosen)} scenarios, "
        f"reference server over {args.transport}",
        flush=True,
    )

    with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as scratch:
        workdir = Path(scratch)
        journal = Path(args.journal).resolve() if args.journal else workdir / "journal.jsonl"
        try:
            server, url = start_server(args.transport, journal)
        except CannotRun as exc:
            print(f"conformance: cannot run: {exc}", file=sys.stderr)
            return 2
        results = []
        try:
            for name, group in chosen:
                result = {"group": group, **run_scenario(node, url, name, workdir)}
                results.append(result)
                mark = "PASS" if result["passed"] else "FAIL"
                print(f"  {mark} {name} [{group}] ({result['duration_s']} s)", flush=True)
                if not result["passed"]:
                    for check in result["checks"]:
                        if check.get("status") == "FAILURE":
                            print(f"       {check.get('id')}: {check.get('errorMessage')}", flush=True)
        finally:
            server_exit = stop_server(server)
        exits = (
            [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if '"event": "exit"' in line]
            if journal.exists()
            else []
        )

    failed = [result["name"] for result in results if not result["passed"]]
    document = {
        "conformance": {"package": PACKAGE, "version": version},
        "node": node_version,
        "python": platform.python_version(),
        "server": {
            "command": "python servers/reference --case conformance",
            "transport": args.transport,
            "exit_code": server_exit,
            "journal_exit": exits[-1] if exits else None,
        },
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "passed": not failed,
        "counts": {"scenarios": len(results), "passed": len(results) - len(failed), "failed": len(failed)},
        "failed": failed,
        "scenarios": results,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_suffix(output.suffix + ".tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    tmp.replace(output)
    print(
        f"conformance {version}: {document['counts']['passed']}/{len(results)} scenarios passed"
        f"{'' if not failed else ' - FAILED: ' + ', '.join(failed)}; result in {output}",
        flush=True,
    )
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
