"""What live mode's recording proxies change in a session with the user's server: the follow-up tool.

The harness's follow-up tool ``echo`` is not the user's server's. Both proxies (``live_stdio.py``
and ``live_http.py``) add it to every ``tools/list`` answer (journaled with ``added``) and answer
its calls themselves, so the follow-up shows whether the client's session survived, as in a
replay. Everything else passes unchanged. :class:`Splice` also follows what the session
negotiated, for the revision each request was sent under (``protocol.request_revision``).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from protocol import META_VERSION, MODERN_VERSIONS, RESULT_COMPLETE, params_meta, request_revision
from tool import FOLLOWUP_TOOL, tool_definitions


class Splice:
    """One proxied session's view of the messages that go through it (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.negotiated: str | None = None
        self._initialize_ids: set[Any] = set()
        self._list_ids: set[Any] = set()

    def revision(self, message: Any) -> str | None:
        """The revision a client message was sent under."""
        return request_revision(message, self.negotiated)

    def from_client(self, message: Any) -> dict[str, Any] | None:
        """Note a client message; the answer the proxy gives it itself (a call of the follow-up
        tool), else None: the message goes to the server."""
        if not isinstance(message, dict):
            return None
        method = message.get("method")
        with self._lock:
            if method == "initialize":
                self._initialize_ids.add(message.get("id"))
            elif method == "tools/list":
                self._list_ids.add(message.get("id"))
        params = message.get("params")
        if method != "tools/call" or not isinstance(params, dict) or params.get("name") != FOLLOWUP_TOOL:
            return None
        text = str((params.get("arguments") or {}).get("text", ""))
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if params_meta(params).get(META_VERSION) in MODERN_VERSIONS:
            result = {"resultType": RESULT_COMPLETE, **result}
        return {"jsonrpc": "2.0", "id": message.get("id"), "result": result}

    def from_server(self, message: Any) -> str | None:
        """Note a server message; when it answers a ``tools/list``, add the follow-up tool to it in
        place and return the journal's note saying so (None: the message is unchanged)."""
        if not isinstance(message, dict) or not isinstance(result := message.get("result"), dict):
            return None
        with self._lock:
            if message.get("id") in self._initialize_ids and isinstance(result.get("protocolVersion"), str):
                self.negotiated = result["protocolVersion"]
            listing = message.get("id") in self._list_ids
        if not listing or not isinstance(result.get("tools"), list):
            return None
        result["tools"] = [*result["tools"], tool_definitions("none")[1]]
        return f"added the follow-up tool {FOLLOWUP_TOOL!r}"


def send_fields(frame: bytes, message: Any, note: str | None) -> dict[str, Any]:
    """The fields of the ``send`` journal line of a frame a proxy passed to the client (``added``:
    what it changed in it), as the reference server journals its own frames."""
    fields: dict[str, Any] = {
        "bytes": len(frame),
        "id": message.get("id") if isinstance(message, dict) else None,
        "sha256": hashlib.sha256(frame).hexdigest(),
        "write_ms": 0.0,
        "error": None,
        "message": message,
    }
    return {**fields, "added": note} if note else fields
