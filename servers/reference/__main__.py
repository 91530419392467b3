"""Command line of the reference server: ``python servers/reference --case ID --schema MODE``.

Serves one fault case per process (``--protocol``: the revision it speaks, 2025-11-25 or
2026-07-28; ``protocol.py``) over stdio, or with ``--transport http-json|http-sse`` over
Streamable HTTP on 127.0.0.1 (``--port``, 0 = any free port): it then prints one line
``{"url": "http://127.0.0.1:PORT/mcp"}`` on stdout and serves until it is signalled.
``--case conformance`` (HTTP only) serves the tools of the official conformance suite instead of
a fault case (``conformance_tools.py``). ``--case probe --probe-kind text|cjk|blob --probe-bytes N``
(stdio only) answers the call with a frame of exactly N bytes, for the harness's boundary probe.
``--case-file PATH`` serves a recorded case instead (``replay.py``): a user's tool, listed and
answered as its server did. ``--list-cases`` prints the implemented case ids as a JSON array and
exits.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # also importable when run as ``python -m servers.reference``
    sys.path.insert(0, HERE)

import replay  # noqa: E402
from cases import CASES, PROBE_CASE, Case, case_ids  # noqa: E402
from journal import Journal  # noqa: E402
from protocol import LATEST_VERSION, REVISIONS, Session  # noqa: E402
from stdio import serve  # noqa: E402
from stdio_faults import PROBE_KINDS  # noqa: E402

if TYPE_CHECKING:
    from conformance_tools import ConformanceSession
    from http_sessions import LockedJournal

SCHEMA_MODES = ("advertised", "hidden", "none")
TRANSPORTS = ("stdio", "http-json", "http-sse")
CONFORMANCE_CASE = "conformance"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="reference-server", description=__doc__)
    parser.add_argument("--case", default="ok", help="fault case id (see --list-cases)")
    parser.add_argument("--case-file", default=None, help="replay a recorded case file instead of a fault case")
    parser.add_argument(
        "--schema",
        default="advertised",
        choices=SCHEMA_MODES,
        help="advertise the tool's outputSchema in tools/list or not",
    )
    parser.add_argument(
        "--protocol",
        default=LATEST_VERSION,
        choices=REVISIONS,
        help="the revision the server speaks: the handshake era up to 2025-11-25, or stateless 2026-07-28",
    )
    parser.add_argument("--journal", default=None, help="append the journal (JSON lines) here")
    parser.add_argument(
        "--results-dir",
        default=None,
        help="also write each result sent, whole, into this directory (named in the journal's send events)",
    )
    parser.add_argument("--list-cases", action="store_true", help="print the case ids and exit")
    parser.add_argument(
        "--transport",
        default="stdio",
        choices=TRANSPORTS,
        help="stdio, or Streamable HTTP answering with JSON bodies or SSE streams",
    )
    parser.add_argument("--port", type=int, default=0, help="HTTP port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--probe-kind", choices=PROBE_KINDS, help="with --case probe: the payload kind")
    parser.add_argument("--probe-bytes", type=int, help="with --case probe: the exact frame size")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.list_cases:
        print(json.dumps(case_ids()))
        return 0
    if args.case == CONFORMANCE_CASE and args.transport == "stdio":
        print("reference-server: --case conformance needs an HTTP transport", file=sys.stderr)
        return 2
    probing = args.case == PROBE_CASE.id
    if probing and (args.transport != "stdio" or args.probe_kind is None or args.probe_bytes is None):
        print("reference-server: --case probe needs stdio, --probe-kind and --probe-bytes", file=sys.stderr)
        return 2
    served: Case
    if args.case_file is not None:
        try:
            served = replay.load(args.case_file)
        except replay.CaseFileError as exc:
            print(f"reference-server: {exc}", file=sys.stderr)
            return 2
    elif args.case not in CASES and args.case not in (CONFORMANCE_CASE, PROBE_CASE.id):
        print(f"reference-server: unknown case {args.case!r}; see --list-cases", file=sys.stderr)
        return 2
    else:  # the conformance tools are not a case: ``_session_factory`` serves them
        served = PROBE_CASE if probing else CASES.get(args.case, CASES["ok"])
    plain = Journal(args.journal, args.results_dir)
    journal: Journal | LockedJournal = plain
    if args.transport != "stdio":
        import http_sessions  # stdio runs never import the HTTP stack
        import http_transport

        journal = http_sessions.LockedJournal(plain)

    def on_signal(signum: int, _frame: object) -> None:
        journal.write("exit", reason="signal", detail=signal.Signals(signum).name)
        journal.close()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    start = {
        "case": served.id if args.case_file else args.case,
        "schema": args.schema,
        "protocol": args.protocol,
        "pid": os.getpid(),
    }
    try:
        if args.transport == "stdio":
            journal.write("start", **start, transport="stdio")
            probe = (args.probe_kind, args.probe_bytes) if probing else None
            reason = serve(Session(served, args.schema, args.protocol), plain, probe)
        else:
            reason = http_transport.serve(
                _session_factory(args, served),
                journal,
                args.transport,
                args.port,
                start=start,
                protocol=args.protocol,
            )
        journal.write("exit", reason=reason, detail=None)
    except BrokenPipeError as exc:
        journal.write("exit", reason="broken-pipe", detail=str(exc))
    except Exception as exc:  # the journal must say how the server ended, whatever happened
        journal.write("exit", reason="error", detail=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        journal.close()
    return 0


def _session_factory(args: argparse.Namespace, served: Case) -> Callable[[], Session | ConformanceSession]:
    """A new protocol session per HTTP session (``initialize``; under 2026-07-28 one for the server)."""
    if args.case == CONFORMANCE_CASE and args.case_file is None:
        from conformance_tools import ConformanceSession

        return lambda: ConformanceSession(args.schema, args.protocol)
    return lambda: Session(served, args.schema, args.protocol)


if __name__ == "__main__":
    sys.exit(main())
