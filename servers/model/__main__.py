"""The scripted model: ``python servers/model --script FILE --journal FILE [--port 0]``.

A model API server on 127.0.0.1 for running real agent hosts offline: it answers each model turn
from a fixed script (``script.py``: call the cell's tool, then the follow-up tool, then answer) in
the API the request's path belongs to (``dialects.py``), and journals every connection and every
request whole, so that the tool result a host put in front of its model can be read back. Prints
``{"url": "http://127.0.0.1:PORT"}`` on stdout once listening and serves until it is signalled.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # also importable when run as ``python -m servers.model``
    sys.path.insert(0, HERE)

from script import Script  # noqa: E402
from server import Journal, serve  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripted-model", description=__doc__)
    parser.add_argument("--script", required=True, help='JSON: {"steps": [{"tool", "arguments"}...], "answer"}')
    parser.add_argument("--journal", required=True, help="JSONL file every connection and request is appended to")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    args = parser.parse_args(argv)
    try:
        with open(args.script, encoding="utf-8") as stream:
            script = Script.from_json(json.load(stream))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"scripted-model: {args.script}: not a script ({exc})", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(args.journal, "a", encoding="utf-8") as journal:
        try:
            serve(args.port, script, Journal(journal), sys.stdout)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
