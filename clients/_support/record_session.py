"""One raw JSON-RPC session with a user's MCP server: open it, list every tool, call one.

    python record_session.py <request.json> <out.json>

Run by ``python -m harness record`` (``harness/recorded/record.py``) as a bounded process group, so the
server it starts (stdio) dies with it. Standard library only; the wire is ``raw_wire.py``'s,
the same as the ``raw-jsonrpc`` column's: nothing validates or alters what the server sends.

The request: ``server`` (``command``, ``args``, ``env``, ``cwd`` for stdio; ``url`` for Streamable
HTTP), ``protocol`` (``2025-11-25``: ``initialize``; ``2026-07-28``: ``server/discover`` and the
``_meta`` envelope), ``tool`` (None: open the session and close it again, as live mode's check of
a URL does), ``arguments``, ``timeout_s`` (per request).

The output (always written, also when a step failed):

- ``stage``: ``done``, or the step that failed: ``open`` (initialize / discover), ``list``
  (tools/list), ``call`` (tools/call), ``lookup`` (the tool is not listed);
- ``error``: one line saying what went wrong (None when done); ``rpc_error``: the JSON-RPC error
  object the server answered with, when that is what went wrong;
- ``protocol``: the revision the session ran under (the one ``initialize`` negotiated);
  ``server_info``: the server's ``name`` / ``version`` as it stated them (None when it did not);
  ``framing``: over HTTP, the ``Content-Type`` the server answered the opening request with;
- ``tools``: every listed tool, exactly as sent, over every page; ``tool``: the called one;
- ``result``: the ``tools/call`` result exactly as sent (parsed JSON); ``frame_bytes``: the size
  of the frame that carried it (stdio: the line with its newline; HTTP: the response body);
- ``frames``: every inbound frame (``raw_wire``), ``exit_code``: the server's, when it exited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from raw_wire import CLIENT_INFO, FAILURES, MODERN_VERSION, BaseWire, Expired, HttpWire, Wire

EXIT_WAIT_S = 0.5
"""After a failed step, how long to wait for the server to be reaped, to tell whether it exited."""
MAX_PAGES = 1000
"""tools/list pages followed at most (a server whose nextCursor never ends is an error)."""


class Failed(Exception):
    """A step failed: ``stage`` and one line; ``rpc_error`` when the server answered with an error."""

    def __init__(self, stage: str, message: str, rpc_error: Any = None) -> None:
        super().__init__(message)
        self.stage = stage
        self.rpc_error = rpc_error


def _request(wire: BaseWire, stage: str, method: str, params: dict[str, Any], timeout_s: float) -> Any:
    """The ``result`` of one request; :class:`Failed` for a transport failure, no answer within
    ``timeout_s`` or an error answer."""
    return _exchange(wire, stage, method, params, timeout_s)[0]


def _exchange(wire: BaseWire, stage: str, method: str, params: dict[str, Any], timeout_s: float) -> tuple[Any, int]:
    """:func:`_request`'s result, and the request's id."""
    try:
        msg_id = wire.start(method, params)
        answer = wire.wait(msg_id, method, time.monotonic() + timeout_s)
    except Expired:
        raise Failed(stage, f"the server did not answer {method} within {timeout_s:g} s") from None
    except FAILURES as exc:
        raise Failed(stage, f"{method}: {type(exc).__name__}: {exc}") from None
    if "error" in answer:
        error = answer["error"]
        text = error.get("message") if isinstance(error, dict) else error
        code = error.get("code") if isinstance(error, dict) else None
        raise Failed(stage, f"{method} answered with error {code}: {text}", error)
    return answer.get("result"), msg_id


def _open(wire: BaseWire, timeout_s: float, out: dict[str, Any]) -> None:
    if wire.modern:
        result, msg_id = _exchange(wire, "open", "server/discover", {}, timeout_s)
        out["framing"] = _frame_of(wire, msg_id).get("content_type")
        supported = (result or {}).get("supportedVersions")
        if not isinstance(supported, list) or MODERN_VERSION not in supported:
            raise Failed("open", f"server/discover does not offer {MODERN_VERSION}: supportedVersions={supported!r}")
        out["protocol"] = MODERN_VERSION
        out["server_info"] = ((result or {}).get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
        return
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}
    result, msg_id = _exchange(wire, "open", "initialize", params, timeout_s)
    out["framing"] = _frame_of(wire, msg_id).get("content_type")
    if not isinstance(result, dict):
        raise Failed("open", f"initialize answered with a result that is not an object: {result!r}")
    wire.initialized({"result": result})
    try:
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    except FAILURES as exc:
        raise Failed("open", f"notifications/initialized: {type(exc).__name__}: {exc}") from None
    out["protocol"] = result.get("protocolVersion")
    out["server_info"] = result.get("serverInfo")


def _list(wire: BaseWire, timeout_s: float) -> list[Any]:
    tools: list[Any] = []
    cursor: Any = None
    for _ in range(MAX_PAGES):
        result = _request(wire, "list", "tools/list", {} if cursor is None else {"cursor": cursor}, timeout_s)
        page = (result or {}).get("tools") if isinstance(result, dict) else None
        if not isinstance(page, list):
            raise Failed("list", f"tools/list answered without a tools array: {json.dumps(result)[:200]}")
        tools.extend(page)
        cursor = result.get("nextCursor")
        if cursor is None:
            return tools
    raise Failed("list", f"tools/list still had a nextCursor after {MAX_PAGES} pages")


def _frame_of(wire: BaseWire, msg_id: int) -> dict[str, Any]:
    """The inbound frame that carried the response with ``msg_id`` (empty when there is none)."""
    for frame in wire.snapshot():
        if frame.get("id") == msg_id and "messages" not in frame:
            return frame
        if any(m.get("id") == msg_id and m.get("kind") == "response" for m in frame.get("messages", [])):
            return frame
    return {}


def _session(wire: BaseWire, request: dict[str, Any], out: dict[str, Any]) -> None:
    timeout_s = float(request["timeout_s"])
    _open(wire, timeout_s, out)
    if request["tool"] is None:
        return
    out["tools"] = _list(wire, timeout_s)
    listed = [tool for tool in out["tools"] if isinstance(tool, dict) and tool.get("name") == request["tool"]]
    if not listed:
        names = ", ".join(str(tool.get("name")) for tool in out["tools"] if isinstance(tool, dict)) or "none"
        raise Failed("lookup", f"tool {request['tool']!r} is not listed; the server lists: {names}")
    out["tool"] = listed[0]
    params = {"name": request["tool"], "arguments": request["arguments"]}
    out["result"], msg_id = _exchange(wire, "call", "tools/call", params, timeout_s)
    size = _frame_of(wire, msg_id).get("bytes")
    out["frame_bytes"] = int(size) if size is not None else None


def _not_json(wire: BaseWire) -> str:
    """What the server wrote on stdout that is not JSON, for the error line (empty when nothing)."""
    bad = [frame for frame in wire.snapshot() if frame.get("parse_error") and "http" not in frame]  # stdio lines
    if not bad:
        return ""
    return f" (the server wrote {len(bad)} line(s) on stdout that are not JSON, the first: {bad[0].get('excerpt')!r})"


def _exited(process: subprocess.Popen[bytes]) -> bool:
    """Whether the server has exited by itself (its stdout may close a moment before it is reaped)."""
    try:
        process.wait(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        return False
    return True


def main() -> int:
    request_path, out_path = sys.argv[1], sys.argv[2]
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    out: dict[str, Any] = {
        "stage": "open",
        "error": None,
        "rpc_error": None,
        "protocol": None,
        "server_info": None,
        "framing": None,
        "tools": [],
        "tool": None,
        "result": None,
        "frame_bytes": None,
        "frames": [],
        "exit_code": None,
    }
    server = request["server"]
    try:
        wire: BaseWire = Wire(server) if server.get("url") is None else HttpWire(server["url"], request["timeout_s"])
    except OSError as exc:
        out["error"] = f"cannot start {server['command']!r}: {exc.strerror or exc}"
        _write(out_path, out)
        return 0
    wire.modern = request["protocol"] == MODERN_VERSION
    process = getattr(wire, "process", None)
    try:
        _session(wire, request, out)
        out["stage"] = "done"
    except Failed as exc:
        out["stage"], out["error"], out["rpc_error"] = exc.stage, str(exc) + _not_json(wire), exc.rpc_error
        if process is not None and _exited(process):
            out["error"] += f" (the server exited with code {process.returncode})"
    finally:
        try:
            wire.close()
        except FAILURES:
            pass
    out["frames"] = wire.snapshot()
    out["exit_code"] = process.returncode if process is not None else None
    _write(out_path, out)
    return 0


def _write(path: str, out: dict[str, Any]) -> None:
    temporary = f"{path}.part"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(out, handle, ensure_ascii=False)
    os.replace(temporary, path)


if __name__ == "__main__":
    sys.exit(main())
