"""The reference column: JSON-RPC by hand, no SDK, no validation.

It shows exactly what came over the wire: every inbound frame's size and whether it parsed
(``wire.frames``), and each call's ``result`` member verbatim. A JSON-RPC error response is
recorded as a raised call with type ``JSONRPCError``. Standard library only.

Transports (``_support/raw_wire.py``, shared with ``python -m harness record``): ``stdio`` (the
server a child process, newline-delimited JSON; a frame is one inbound line) and ``http-json`` /
``http-sse`` (one ``urllib`` POST per message, the body read as JSON or as an SSE stream; a frame is
one HTTP response body; closing sends ``DELETE`` with the session id).

Protocol revisions (the cell's ``protocol``): under ``2025-11-25`` the session opens with
``initialize`` / ``notifications/initialized`` and HTTP carries the session id and negotiated version
as above; under ``2026-07-28`` there is no handshake: the ``initialize`` step is a
``server/discover`` request (its result must list 2026-07-28), every request carries
``io.modelcontextprotocol/protocolVersion``, ``clientInfo`` and ``clientCapabilities`` (empty) in its
``_meta``, and every HTTP POST the ``MCP-Protocol-Version``, ``Mcp-Method`` and (for ``tools/call``)
``Mcp-Name`` headers; there is no session to DELETE.

A call with ``cancel_after_ms`` is cancelled the way the specification describes: after that many
milliseconds without a response the adapter sends ``notifications/cancelled`` (``requestId``,
``reason``) and stops waiting for that id (a late response is still recorded in ``wire.frames``).
The call is recorded as raised with the reserved type ``Cancelled`` and ``cancelled_after_ms``.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from observe import Budget, Observation, Stopwatch, check_options, fail, read_cell, step
from raw_wire import (
    CLIENT_INFO,
    FAILURES,
    MODERN_VERSION,
    PROTOCOL_VERSION,
    TRANSPORTS,
    BaseWire,
    Expired,
    HttpWire,
    Wire,
)


def _error(exc: BaseException) -> dict[str, Any]:
    return {"type": type(exc).__name__, "code": None, "message": str(exc)}


def _call(wire: BaseWire, call: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    watch = Stopwatch()
    method, params = "tools/call", {"name": call["name"], "arguments": call["arguments"]}
    after_ms = call.get("cancel_after_ms")
    deadline = time.monotonic() + timeout_s
    try:
        msg_id = wire.start(method, params)
        if after_ms is None or after_ms / 1000.0 >= timeout_s:
            try:
                response = wire.wait(msg_id, method, deadline)
            except Expired:
                raise TimeoutError(f"no response to {method} (id {msg_id}) within {timeout_s:.1f} s") from None
        else:
            try:
                response = wire.wait(msg_id, method, watch.started + after_ms / 1000.0)
            except Expired:
                issued = watch.ms()
                reason = f"cancelled by the raw-jsonrpc adapter after {after_ms} ms"
                message = (
                    f"the adapter cancelled the call after {after_ms} ms: sent notifications/cancelled "
                    f"for id {msg_id} and stopped waiting for its response"
                )
                try:
                    wire.send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": msg_id, "reason": reason},
                        }
                    )
                except FAILURES as exc:
                    message += f" (sending notifications/cancelled failed: {type(exc).__name__}: {exc})"
                entry = Observation.call_entry(
                    call["name"], watch.ms(), error={"type": "Cancelled", "code": None, "message": message}
                )
                entry["cancelled_after_ms"] = issued
                return entry
    except FAILURES as exc:
        entry = Observation.call_entry(call["name"], watch.ms(), error=_error(exc))
        if after_ms is not None:
            entry["cancelled_after_ms"] = None
        return entry
    entry = _result_entry(call, watch, response)
    if after_ms is not None:
        entry["cancelled_after_ms"] = None
    return entry


def _result_entry(call: dict[str, Any], watch: Stopwatch, response: dict[str, Any]) -> dict[str, Any]:
    if "error" in response:
        error = response["error"] if isinstance(response["error"], dict) else {}
        return Observation.call_entry(
            call["name"],
            watch.ms(),
            error={
                "type": "JSONRPCError",
                "code": error.get("code"),
                "message": str(error.get("message")),
                "data": error.get("data"),
            },
        )
    return Observation.call_entry(call["name"], watch.ms(), result=response.get("result"))


def _initialize(wire: BaseWire, timeout_s: float) -> Any:
    """The handshake-era opening: ``initialize``, then ``notifications/initialized``; the version it negotiated."""
    answer = wire.request(
        "initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}, timeout_s
    )
    if "error" in answer:
        raise RuntimeError(f"initialize answered with an error: {answer['error']}")
    wire.initialized(answer)
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return (answer.get("result") or {}).get("protocolVersion")


def _discover(wire: BaseWire, timeout_s: float) -> str:
    """The 2026-07-28 opening: ``server/discover``, whose result must offer 2026-07-28."""
    answer = wire.request("server/discover", {}, timeout_s)
    if "error" in answer:
        raise RuntimeError(f"server/discover answered with an error: {answer['error']}")
    supported = (answer.get("result") or {}).get("supportedVersions")
    if not isinstance(supported, list) or MODERN_VERSION not in supported:
        raise RuntimeError(f"server/discover does not offer {MODERN_VERSION}: supportedVersions={supported!r}")
    return MODERN_VERSION


def main() -> int:
    cell = read_cell(sys.argv[1])
    check_options(cell["options"], {})
    transport = cell.get("transport", "stdio")
    if transport not in TRANSPORTS:
        fail(f"transport {transport!r} is not supported by this adapter ({', '.join(TRANSPORTS)})")
    if transport != "stdio" and not isinstance(cell["server"].get("url"), str):
        fail(f"transport {transport!r} needs server.url")
    for call in cell["calls"]:
        after = call.get("cancel_after_ms")
        if after is not None and (type(after) is not int or after < 0):
            fail(f"cancel_after_ms: expected a non-negative integer, got {after!r}")
    observation = Observation(cell, package="")
    budget = Budget.of(cell, time.monotonic(), close_reserve_s=2.0)
    timeout_s = min(cell["call_timeout_ms"] / 1000.0, budget.steps - time.monotonic())
    wire: BaseWire = Wire(cell["server"]) if transport == "stdio" else HttpWire(cell["server"]["url"], timeout_s)
    wire.modern = cell.get("protocol") == MODERN_VERSION
    watch = observation.begin("initialize")
    try:
        version = _discover(wire, timeout_s) if wire.modern else _initialize(wire, timeout_s)
        observation.end("initialize", step(watch, protocol_version=version))
    except (*FAILURES, RuntimeError) as exc:
        observation.end("initialize", step(watch, exc, protocol_version=None))
    if observation.data["initialize"]["status"] == "ok":
        for call in cell["calls"]:
            observation.begin("call", call["name"])
            observation.end("call", _call(wire, call, timeout_s))
        observation.begin("followup", cell["followup"]["name"])
        observation.end("followup", _call(wire, cell["followup"], timeout_s))
    watch = observation.begin("close")
    try:
        wire.close()
    except FAILURES as exc:
        observation.end("close", step(watch, exc))
    else:
        observation.end("close", step(watch))
    observation.data["wire"] = {"frames": wire.snapshot()}
    observation.save(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
