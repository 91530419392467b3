"""What an HTTP request to the Streamable HTTP endpoint carries, read and parsed for the journal.

- :func:`read_body`: the body, by ``Content-Length`` or chunked transfer encoding, at most
  :data:`MAX_BODY` bytes (``ValueError`` beyond; ``OSError`` when the client goes away).
- :class:`Posted`: a POSTed body parsed as one JSON-RPC message, and the fields of its ``recv``
  journal line (``bytes``, ``kind``, ``method``, ``id``, ``params``, ``protocol``: the revision it
  was sent under, and ``error`` when the body is not JSON).
- :func:`header_info`: the request headers the ``recv`` line's ``http`` object records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from email.message import Message
from io import BufferedIOBase
from typing import Any

from protocol import message_kind

MAX_BODY = 64 * 1024 * 1024


def read_body(headers: Message, rfile: BufferedIOBase) -> bytes:
    """The request body; raises ``ValueError`` when it is larger than :data:`MAX_BODY`."""
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        chunks: list[bytes] = []
        total = 0
        while True:
            size = int(rfile.readline(1024).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            total += size
            if total > MAX_BODY:
                raise ValueError("body too large")
            chunks.append(rfile.read(size))
            rfile.readline(1024)
    length = int(headers.get("Content-Length") or 0)
    if length > MAX_BODY:
        raise ValueError("body too large")
    return rfile.read(length) if length > 0 else b""


def header_info(headers: Message) -> dict[str, Any]:
    """``content_type``, ``accept``, ``session``, ``protocol_version``, ``mcp_method``, ``mcp_name``:
    the headers a ``recv`` records, as they came (``Mcp-Name`` undecoded)."""
    return {
        "content_type": headers.get("Content-Type"),
        "accept": headers.get("Accept"),
        "session": headers.get("Mcp-Session-Id"),
        "protocol_version": headers.get("MCP-Protocol-Version"),
        "mcp_method": headers.get("Mcp-Method"),
        "mcp_name": headers.get("Mcp-Name"),
    }


@dataclass(frozen=True)
class Posted:
    """A POSTed body parsed as JSON: the message (None when it is not JSON), its kind, why not JSON."""

    size: int
    message: Any
    kind: str
    parse_error: str | None

    @classmethod
    def parse(cls, body: bytes) -> Posted:
        try:
            message = json.loads(body)
        except ValueError as exc:
            return cls(len(body), None, "invalid", str(exc))
        return cls(len(body), message, message_kind(message), None)

    @property
    def is_initialize(self) -> bool:
        return self.kind == "request" and self.message.get("method") == "initialize"

    def recv_fields(self, protocol: str | None) -> dict[str, Any]:
        """The ``recv`` line's fields, in journal order; ``protocol`` is the revision the message was
        sent under (``Session.revision``)."""
        is_dict = isinstance(self.message, dict)
        fields = {
            "bytes": self.size,
            "kind": self.kind,
            "method": self.message.get("method") if is_dict else None,
            "id": self.message.get("id") if is_dict else None,
            "params": self.message.get("params") if is_dict else None,
            "protocol": protocol,
        }
        if self.parse_error:
            fields["error"] = self.parse_error
        return fields
