"""Command line of the reference server: ``python servers/reference --case ID --schema MODE``.

Serves one fault case per process over stdio. ``--list-cases`` prints the implemented case ids
as a JSON array and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # also importable when run as ``python -m servers.reference``
    sys.path.insert(0, HERE)

from cases import CASES, case_ids  # noqa: E402
from journal import Journal  # noqa: E402
from protocol import Session  # noqa: E402
from stdio import serve  # noqa: E402

SCHEMA_MODES = ("advertised", "hidden", "none")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="reference-server", description=__doc__)
    parser.add_argument("--case", default="ok", help="fault case id (see --list-cases)")
    parser.add_argument("--schema", default="advertised", choices=SCHEMA_MODES,
                        help="advertise get_account_balance's outputSchema in tools/list or not")
    parser.add_argument("--journal", default=None, help="append the journal (JSON lines) here")
    parser.add_argument("--list-cases", action="store_true", help="print the case ids and exit")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.list_cases:
        print(json.dumps(case_ids()))
        return 0
    if args.case not in CASES:
        print(f"reference-server: unknown case {args.case!r}; see --list-cases", file=sys.stderr)
        return 2
    journal = Journal(args.journal)

    def on_signal(signum: int, _frame: object) -> None:
        journal.write("exit", reason="signal", detail=signal.Signals(signum).name)
        journal.close()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    journal.write("start", case=args.case, schema=args.schema, pid=os.getpid(), transport="stdio")
    try:
        reason = serve(Session(CASES[args.case], args.schema), journal)
        journal.write("exit", reason=reason, detail=None)
    except BrokenPipeError as exc:
        journal.write("exit", reason="broken-pipe", detail=str(exc))
    except Exception as exc:  # the journal must say how the server ended, whatever happened
        journal.write("exit", reason="error", detail=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        journal.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
