"""The reference column: JSON-RPC over stdio by hand, no SDK, no validation.

It shows exactly what came over the wire: every inbound frame's size and whether it parsed
(``wire.frames``), and each call's ``result`` member verbatim. A JSON-RPC error response is
recorded as a raised call with type ``JSONRPCError``. Standard library only.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

from observe import Budget, Observation, Stopwatch, check_options, read_cell, step

PROTOCOL_VERSION = "2025-11-25"


class Wire:
    """The server process and a reader thread that parses every inbound line."""

    def __init__(self, server: dict[str, Any]) -> None:
        env = {**os.environ, **(server.get("env") or {})}
        self.process = subprocess.Popen(
            [server["command"], *server["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
        )
        self.frames: list[dict[str, Any]] = []
        self.responses: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            frame: dict[str, Any] = {"bytes": len(line), "parse_error": None, "kind": None, "id": None}
            try:
                message = json.loads(line)
            except ValueError as exc:
                frame["parse_error"] = str(exc)
                self.frames.append(frame)
                continue
            if isinstance(message, dict):
                frame["id"] = message.get("id")
                frame["kind"] = "response" if ("result" in message or "error" in message) else (
                    "request" if "id" in message else "notification")
                if frame["kind"] == "response":
                    self.responses.put(message)
            self.frames.append(frame)
        self.responses.put(None)  # end of stream

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send a request and wait for the response with its id; raises on EOF or timeout."""
        self._next_id += 1
        msg_id = self._next_id
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no response to {method} (id {msg_id}) within {timeout_s:.1f} s")
            try:
                message = self.responses.get(timeout=remaining)
            except queue.Empty:
                continue
            if message is None:
                self.responses.put(None)
                raise EOFError(f"server closed stdout before answering {method} (id {msg_id})")
            if message.get("id") == msg_id:
                return message

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _call(wire: Wire, call: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    watch = Stopwatch()
    try:
        response = wire.request("tools/call", {"name": call["name"], "arguments": call["arguments"]}, timeout_s)
    except (TimeoutError, EOFError, OSError) as exc:
        return Observation.call_entry(call["name"], watch.ms(), error={
            "type": type(exc).__name__, "code": None, "message": str(exc)})
    if "error" in response:
        error = response["error"] if isinstance(response["error"], dict) else {}
        return Observation.call_entry(call["name"], watch.ms(), error={
            "type": "JSONRPCError", "code": error.get("code"), "message": str(error.get("message")),
            "data": error.get("data")})
    return Observation.call_entry(call["name"], watch.ms(), result=response.get("result"))


def main() -> int:
    cell = read_cell(sys.argv[1])
    check_options(cell["options"], {})
    observation = Observation(cell, package="")
    budget = Budget.of(cell, time.monotonic(), close_reserve_s=2.0)
    timeout_s = min(cell["call_timeout_ms"] / 1000.0, budget.steps - time.monotonic())
    wire = Wire(cell["server"])
    watch = observation.begin("initialize")
    try:
        answer = wire.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "mcp-client-matrix-raw", "version": "0.1.0"}}, timeout_s)
        if "error" in answer:
            raise RuntimeError(f"initialize answered with an error: {answer['error']}")
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        version = (answer.get("result") or {}).get("protocolVersion")
        observation.end("initialize", step(watch, protocol_version=version))
    except (TimeoutError, EOFError, OSError, RuntimeError) as exc:
        observation.end("initialize", step(watch, exc, protocol_version=None))
    if observation.data["initialize"]["status"] == "ok":
        for call in cell["calls"]:
            observation.begin("call", call["name"])
            observation.end("call", _call(wire, call, timeout_s))
        observation.begin("followup", cell["followup"]["name"])
        observation.end("followup", _call(wire, cell["followup"], timeout_s))
    watch = observation.begin("close")
    wire.close()
    observation.end("close", step(watch))
    observation.data["wire"] = {"frames": wire.frames}
    observation.save(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
