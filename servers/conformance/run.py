"""Run the official MCP conformance suite's server scenarios against the reference server.

    python servers/conformance/run.py --output servers/conformance/last-result.json [--fresh]

Needs ``npm ci`` in this directory first (``nox -s conformance`` does it). For each revision the
reference server speaks (2025-11-25, then 2026-07-28), starts
``python servers/reference --case conformance --protocol REV --transport http-sse --port 0`` on
127.0.0.1, runs each selected scenario with the pinned CLI
(``conformance server --url URL --scenario NAME --spec-version REV``, one process per scenario so
that one scenario cannot spoil the next), stops the server with SIGTERM, and writes one JSON
document to ``--output``; when ``--output`` already holds the result of the same inputs (the
reference server's sources, this script, the pinned suite, the selection: ``inputs_digest``), that
result stands and nothing runs, unless ``--fresh``::

    {"inputs": "<sha256>", "conformance": {"package": "@modelcontextprotocol/conformance", "version": "0.2.0-alpha.12"},
     "node": "v22...", "servers": {"2025-11-25": {...}, ...}, "passed": true,
     "counts": {"scenarios": 31, "passed": 31, "failed": 0,
                "by_revision": {"2025-11-25": {"scenarios": 18, "passed": 18, "failed": 0}, ...}},
     "scenarios": [{"name": "tools-list", "revision": "2025-11-25", "group": "tools", "passed": true,
                    "exit_code": 0, "duration_s": 0.9, "checks": [{"id": ..., "status": "SUCCESS"}]}, ...],
     "not_run": {"2026-07-28": [{"name": "prompts-list", "reason": "..."}, ...]}}

Groups, per revision (a scenario runs at a revision only when ``conformance list --server`` tags
it with that revision; a scenario a group names that is not tagged is an error, and so is a
``--scenario`` tagged with none of the selected revisions, never a silent skip):

- ``tools``: every server scenario named ``tools-*`` the suite has for the revision;
- ``tools-extra``: scenarios that list or call tools for a SEP: ``json-schema-2020-12`` (both),
  ``elicitation-sep1034-defaults`` and ``elicitation-sep1330-enums`` (2025-11-25);
- ``transport``: 2025-11-25: ``server-initialize``, ``ping``, ``logging-set-level``,
  ``dns-rebinding-protection``; 2026-07-28: ``server-stateless`` (per-request ``_meta``,
  ``server/discover``, version and capability errors, 404 for removed methods),
  ``http-header-validation`` (``Mcp-Method``, ``Mcp-Name``), ``server-sse-multiple-streams``
  (concurrent POST streams of ``tools/list``) and ``dns-rebinding-protection``.

The server scenarios of suite 0.2.0-alpha.12 tagged 2026-07-28: ``server-stateless``,
``completion-complete``, ``tools-list``, ``tools-call-simple-text``, ``tools-call-image``,
``tools-call-audio``, ``tools-call-embedded-resource``, ``tools-call-mixed-content``,
``tools-call-error``, ``tools-call-with-progress``, ``json-schema-2020-12``,
``server-sse-multiple-streams``, ``resources-list``, ``resources-read-text``,
``resources-read-binary``, ``resources-templates-read``, ``sep-2164-resource-not-found``,
``prompts-list``, ``prompts-get-simple``, ``prompts-get-with-args``,
``prompts-get-embedded-resource``, ``prompts-get-with-image``, ``dns-rebinding-protection``,
``caching``, ``http-header-validation``, ``http-custom-header-server-validation`` and the
fourteen ``input-required-result-*``; the ``tasks-*`` and ``sep-2640-skills-*`` scenarios are
tagged ``extension``. At 2026-07-28, 13 of them run (the groups above); :data:`NOT_RUN` names
why each other one does not (the reference server implements tools only: no completion,
resources, prompts, MRTR input requests, tasks or skills; ``caching`` also asks ``prompts/list``,
``resources/list``, ``resources/templates/list`` and ``resources/read``, each a FAILURE when the
method does not exist; ``http-custom-header-server-validation`` needs a tool whose inputSchema
declares ``x-mcp-header`` parameters and the server's validation of their ``Mcp-Param-*``
headers, and the reference server's tools declare none). A scenario the suite tags 2026-07-28
that is neither selected nor in :data:`NOT_RUN` stops the run (exit 2), so a new suite version
cannot leave one out unnoticed. At 2025-11-25 the selection is the one this runner always made
(the suite also tags completion, resources, prompts, ``server-session-lifecycle``,
``server-sse-polling`` and ``server-sse-multiple-streams`` with it; they are not run there).

Exit status: 0 when every selected scenario passed, 1 when one failed, 2 when the check could not
run at all. Standard library only; no network but loopback.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import selectors
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

REVISIONS = ("2025-11-25", "2026-07-28")
EXTRA_TOOLS = {
    "2025-11-25": ("json-schema-2020-12", "elicitation-sep1034-defaults", "elicitation-sep1330-enums"),
    "2026-07-28": ("json-schema-2020-12",),
}
TRANSPORT = {
    "2025-11-25": ("server-initialize", "ping", "logging-set-level", "dns-rebinding-protection"),
    "2026-07-28": (
        "server-stateless",
        "http-header-validation",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ),
}
GROUPS = ("tools", "tools-extra", "transport")
_NO_RESOURCES = "the reference server implements no resources (resources/* get -32601)"
_NO_PROMPTS = "the reference server implements no prompts (prompts/* get -32601)"
_NO_MRTR = "the reference server implements no MRTR input requests (InputRequiredResult, inputResponses)"
NOT_RUN = {
    "2026-07-28": {
        "completion-complete": "the reference server implements no completion/complete",
        "resources-list": _NO_RESOURCES,
        "resources-read-text": _NO_RESOURCES,
        "resources-read-binary": _NO_RESOURCES,
        "resources-templates-read": _NO_RESOURCES,
        "sep-2164-resource-not-found": _NO_RESOURCES,
        "prompts-list": _NO_PROMPTS,
        "prompts-get-simple": _NO_PROMPTS,
        "prompts-get-with-args": _NO_PROMPTS,
        "prompts-get-embedded-resource": _NO_PROMPTS,
        "prompts-get-with-image": _NO_PROMPTS,
        "caching": "also checks prompts/list, resources/list, resources/templates/list and resources/read, "
        "which the reference server does not implement",
        "http-custom-header-server-validation": "needs a tool declaring x-mcp-header parameters and the server's "
        "Mcp-Param-* validation; the reference server's tools declare none",
        **{
            f"input-required-result-{name}": _NO_MRTR
            for name in (
                "basic-elicitation",
                "basic-sampling",
                "basic-list-roots",
                "request-state",
                "multiple-input-requests",
                "multi-round",
                "missing-input-response",
                "non-tool-request",
                "result-type",
                "unsupported-methods",
                "tampered-state",
                "capability-check",
                "ignore-extra-params",
                "validate-input",
            )
        },
    },
}
"""Per revision: the scenarios the suite tags with it that are not run, and why."""
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
    version: str = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return version


def server_scenarios(node: str) -> dict[str, tuple[str, ...]]:
    """Every server scenario the installed CLI knows, in its order, with the revisions it is tagged
    with (``- tools-list [2025-06-18,2025-11-25,2026-07-28]``; ``extension`` is a tag too)."""
    done = subprocess.run([node, str(CLI), "list", "--server"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise CannotRun(f"`conformance list --server` failed: {done.stderr.strip()[-2000:]}")
    scenarios: dict[str, tuple[str, ...]] = {}
    for line in done.stdout.splitlines():
        line = line.strip()
        if not line.startswith("- "):
            continue
        name, _, tags = line[2:].partition(" ")
        scenarios[name] = tuple(tag.strip() for tag in tags.strip().strip("[]").split(",") if tag.strip())
    return scenarios


def group_of(name: str, revision: str) -> str:
    if name.startswith("tools-"):
        return "tools"
    if name in EXTRA_TOOLS[revision]:
        return "tools-extra"
    if name in TRANSPORT[revision]:
        return "transport"
    return "other"


def select(known: dict[str, tuple[str, ...]], revision: str, groups: list[str], names: list[str]) -> list[str]:
    """The scenarios to run at ``revision``: explicit names (those tagged with it), else the groups."""
    at_revision = [name for name, tags in known.items() if revision in tags]
    if names:
        return [name for name in names if name in at_revision]
    named = [name for name in (*EXTRA_TOOLS[revision], *TRANSPORT[revision]) if group_of(name, revision) in groups]
    missing = [name for name in named if name not in at_revision]
    if missing:
        raise CannotRun(f"scenario(s) {missing} are not in this version of the suite for {revision}")
    chosen = [name for name in at_revision if group_of(name, revision) in groups]
    if "tools" in groups and not any(group_of(name, revision) == "tools" for name in chosen):
        raise CannotRun(f"the suite lists no tools-* server scenario for {revision}")
    excused = NOT_RUN.get(revision, {})
    unclassified = [name for name in at_revision if group_of(name, revision) == "other" and name not in excused]
    if revision in NOT_RUN and unclassified:
        raise CannotRun(f"{revision} scenario(s) {unclassified} are neither run nor in NOT_RUN (classify them)")
    return chosen


def start_server(transport: str, revision: str, journal: Path) -> tuple[subprocess.Popen[str], str]:
    """Start the reference server in conformance mode speaking ``revision``; returns it and its URL."""
    process = subprocess.Popen(
        [
            sys.executable,
            str(SERVER),
            "--case",
            "conformance",
            "--protocol",
            revision,
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
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=0.2):
                line = process.stdout.readline()
                if line:
                    url: str = json.loads(line)["url"]
                    return process, url
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


def run_scenario(node: str, url: str, name: str, revision: str, workdir: Path) -> dict[str, Any]:
    out_dir = workdir / revision / name
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    command = [node, str(CLI), "server", "--url", url, "--scenario", name, "--spec-version", revision]
    try:
        done = subprocess.run(
            [*command, "-o", str(out_dir)],
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
        "revision": revision,
        "group": group_of(name, revision),
        "passed": passed,
        "exit_code": exit_code,
        "duration_s": duration,
        "checks": [
            {key: check.get(key) for key in ("id", "name", "status", "errorMessage") if key in check}
            for check in checks
        ],
        "output_tail": None if passed else (stdout[-3000:] + stderr[-3000:]),
    }


def run_revision(
    node: str, revision: str, chosen: list[str], transport: str, workdir: Path, journal: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Start the server speaking ``revision``, run ``chosen`` against it, stop it: the results and
    the server's facts (exit code, the journal's exit line)."""
    server, url = start_server(transport, revision, journal)
    results = []
    try:
        for name in chosen:
            result = run_scenario(node, url, name, revision, workdir)
            results.append(result)
            mark = "PASS" if result["passed"] else "FAIL"
            print(f"  {mark} {name} [{revision} {result['group']}] ({result['duration_s']} s)", flush=True)
            for check in result["checks"]:
                if check.get("status") == "FAILURE" or (result["passed"] and check.get("status") == "WARNING"):
                    print(f"       {check.get('status')} {check.get('id')}: {check.get('errorMessage')}", flush=True)
    finally:
        server_exit = stop_server(server)
    exits = (
        [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if '"event": "exit"' in line]
        if journal.exists()
        else []
    )
    facts = {
        "command": f"python servers/reference --case conformance --protocol {revision} --transport {transport}",
        "exit_code": server_exit,
        "journal_exit": exits[-1] if exits else None,
    }
    return results, facts


def counts(results: list[dict[str, Any]]) -> dict[str, int]:
    failed = sum(1 for result in results if not result["passed"])
    return {"scenarios": len(results), "passed": len(results) - failed, "failed": failed}


def inputs_digest(args: argparse.Namespace) -> str:
    """What decides the result: the reference server's sources, this script, the pinned suite (its
    lockfile, which pins the Node release it runs on too), the Python that runs the server, and the
    selection. A result of the same inputs is reused (``--fresh``: never)."""
    selection = (platform.python_version(), args.transport, args.revision, args.group, args.scenario)
    digest = hashlib.sha256(repr(selection).encode())
    files = [*sorted(p for p in SERVER.rglob("*.py") if "__pycache__" not in p.parts), Path(__file__).resolve()]
    for path in [*files, HERE / "package.json", HERE / "package-lock.json"]:
        digest.update(f"\0{path.relative_to(REPO)}\0".encode() + (path.read_bytes() if path.is_file() else b"<absent>"))
    return digest.hexdigest()


def reused(output: Path, inputs: str) -> dict[str, Any] | None:
    """The result at ``output`` when it was made from ``inputs``, else None (and it is removed: a
    result of other inputs is never reported)."""
    try:
        document = json.loads(output.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        document = None
    if isinstance(document, dict) and document.get("inputs") == inputs and "counts" in document:
        return document
    output.unlink(missing_ok=True)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--output", required=True, help="write the machine-readable result here (JSON)")
    parser.add_argument("--transport", default="http-sse", choices=("http-sse", "http-json"))
    parser.add_argument(
        "--revision", action="append", choices=REVISIONS, help="revision to run (repeatable; default: both)"
    )
    parser.add_argument(
        "--group", action="append", choices=GROUPS, help="scenario group to run (repeatable; default: all groups)"
    )
    parser.add_argument("--scenario", action="append", default=[], help="run only this scenario (repeatable)")
    parser.add_argument("--journal-dir", default=None, help="keep the servers' journals here (journal-REV.jsonl)")
    parser.add_argument("--fresh", action="store_true", help="run even when --output holds a result of the same inputs")
    args = parser.parse_args(argv)
    output = Path(args.output).resolve()
    revisions = [revision for revision in REVISIONS if revision in (args.revision or REVISIONS)]
    inputs = inputs_digest(args)
    earlier = None if args.fresh or args.journal_dir else reused(output, inputs)
    if earlier is not None:
        print(f"conformance: the result of {earlier['date']} is reused (same server, suite and selection)", flush=True)
        return 0 if earlier["passed"] else 1
    output.unlink(missing_ok=True)

    try:
        version = conformance_version()
        node, node_version = node_binary()
        known = server_scenarios(node)
        plan = {revision: select(known, revision, args.group or list(GROUPS), args.scenario) for revision in revisions}
        unplanned = [name for name in args.scenario if not any(name in chosen for chosen in plan.values())]
        if unplanned:
            raise CannotRun(f"scenario(s) {unplanned} are not tagged with {' or '.join(revisions)} in the suite")
    except CannotRun as exc:
        print(f"conformance: cannot run: {exc}", file=sys.stderr)
        return 2
    print(
        f"conformance: {PACKAGE} {version} (node {node_version}), "
        + ", ".join(f"{len(chosen)} scenarios at {revision}" for revision, chosen in plan.items())
        + f", reference server over {args.transport}",
        flush=True,
    )

    results: list[dict[str, Any]] = []
    servers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as scratch:
        workdir = Path(scratch)
        journals = Path(args.journal_dir).resolve() if args.journal_dir else workdir
        journals.mkdir(parents=True, exist_ok=True)
        for revision, chosen in plan.items():
            try:
                ran, servers[revision] = run_revision(
                    node, revision, chosen, args.transport, workdir, journals / f"journal-{revision}.jsonl"
                )
            except CannotRun as exc:
                print(f"conformance: cannot run: {exc}", file=sys.stderr)
                return 2
            results.extend(ran)

    failed = [f"{result['name']} ({result['revision']})" for result in results if not result["passed"]]
    by_revision = {revision: counts([r for r in results if r["revision"] == revision]) for revision in plan}
    document = {
        "inputs": inputs,
        "conformance": {"package": PACKAGE, "version": version},
        "node": node_version,
        "python": platform.python_version(),
        "transport": args.transport,
        "servers": servers,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "passed": not failed,
        "counts": {**counts(results), "by_revision": by_revision},
        "failed": failed,
        "scenarios": results,
        "not_run": {
            revision: [
                {"name": name, "reason": reason}
                for name, reason in NOT_RUN[revision].items()
                if revision in known.get(name, ())
            ]
            for revision in plan
            if revision in NOT_RUN and not args.scenario
        },
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_suffix(output.suffix + ".tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    tmp.replace(output)
    summary = ", ".join(f"{c['passed']}/{c['scenarios']} at {revision}" for revision, c in by_revision.items())
    print(
        f"conformance {version}: {summary} scenarios passed"
        f"{'' if not failed else ' - FAILED: ' + ', '.join(failed)}; result in {output}",
        flush=True,
    )
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
