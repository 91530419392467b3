"""A JSON-RPC message accepted by the Streamable HTTP transport, routed to its session and answered.

- :func:`accept`: a notification goes to the protocol session (whatever it returns is dropped), a
  response to the thread waiting for it (a request the session sent the client on an SSE stream).
- :func:`answer`: a request goes to the protocol session; what ``handle`` returns is written
  as one ``application/json`` body (``http-json``: only the first message can be sent, the rest is
  journaled as ``unsent``) or as an :class:`http_writers.SseStream` (``http-sse``: one event per
  message, then the end of the stream). A request for which ``handle`` returns nothing is journaled
  ``unanswered`` and held until the client closes the connection (the HTTP form of "never
  answered"). An exception of the session is journaled as ``error``: a 500 in ``http-json``, the end
  of the stream without an answer in ``http-sse`` (a 500 when the stream had not started).

Under 2026-07-28 (the stateless holder) an answer's status is :func:`http_checks.answer_status`:
404 for a ``-32601``, 400 for ``-32021`` and the spec's other codes, else 200; in ``http-sse`` the
stream starts with its first message, and an error answer with a status other than 200 that comes
before anything was streamed is written as an ``application/json`` body with that status.

A session object with a ``handle_streaming(message, stream)`` method (the ``--case conformance``
session, :mod:`conformance_tools`) is called with the request's :class:`SseStream` (None in
``http-json``) instead of ``handle``, so it can send notifications and requests before its answer.
Plain sessions are called under their lock, one message at a time, as on stdio.
"""

from __future__ import annotations

from typing import Any

from http_checks import answer_status
from http_sessions import HttpSession
from http_writers import Responder, SseStream, StreamClosed

INTERNAL_ERROR = -32603


def accept(http_session: HttpSession, message: dict[str, Any], kind: str) -> None:
    """A ``notification`` or a ``response`` (``kind``; the handler answers 202)."""
    if kind == "response":
        http_session.deliver(message)
    else:
        _handle(http_session, message, None)


def answer(responder: Responder, http_session: HttpSession, message: dict[str, Any], mode: str) -> None:
    """A request, answered in ``mode`` (``http-json`` or ``http-sse``)."""
    if mode == "http-sse":
        _answer_sse(responder, http_session, message)
    else:
        _answer_json(responder, http_session, message)


def _handle(http_session: HttpSession, message: dict[str, Any], stream: SseStream | None) -> list[Any]:
    """What the protocol session answers to ``message``: the messages to send, in order."""
    streaming = getattr(http_session.session, "handle_streaming", None)
    responses: list[Any]
    if streaming is not None:
        responses = streaming(message, stream)
        return responses
    with http_session.lock:
        responses = http_session.session.handle(message)
    return responses


def _note_version(http_session: HttpSession, message: dict[str, Any], responses: list[Any]) -> None:
    """Keep the protocol version an ``initialize`` answer negotiated (the version header's other value)."""
    if message.get("method") != "initialize":
        return
    for response in responses:
        result = response.get("result") if isinstance(response, dict) else None
        if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
            http_session.version = result["protocolVersion"]


def _failed(responder: Responder, message: dict[str, Any], exc: Exception) -> None:
    responder.journal.write(
        "error", id=message.get("id"), detail=f"{type(exc).__name__}: {exc}", http=responder.http_info(500)
    )


def _answer_json(responder: Responder, http_session: HttpSession, message: dict[str, Any]) -> None:
    try:
        responses = _handle(http_session, message, None)
    except Exception as exc:  # a bug of ours: journaled, and the client gets a 500
        _failed(responder, message, exc)
        responder.error(500, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")
        return
    _note_version(http_session, message, responses)
    if not responses:
        responder.journal.write("unanswered", id=message.get("id"), http=responder.http_info(None))
        responder.wait_for_client_close()
        return
    first, rest = responses[0], responses[1:]
    status = answer_status(first) if http_session.stateless else 200
    if not responder.json_answer(first, http_session.id, status):
        return
    for extra in rest:
        responder.journal.write(
            "unsent", id=extra.get("id"), message=extra, reason="http-json carries one message per HTTP response"
        )


def _answer_sse(responder: Responder, http_session: HttpSession, message: dict[str, Any]) -> None:
    stream = SseStream(responder, http_session)
    try:
        if not http_session.stateless:
            stream.start()  # 2025-11-25: the headers right away, as SDK servers do
        try:
            responses = _handle(http_session, message, stream)
        except (StreamClosed, OSError):
            raise
        except Exception as exc:  # a bug of ours: journaled, and the stream ends without an answer
            _failed(responder, message, exc)
            if stream.started:
                stream.finish()
            else:
                responder.error(500, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")
            return
        _note_version(http_session, message, responses)
        if not responses:
            stream.start()
            responder.journal.write("unanswered", id=message.get("id"), http=responder.http_info(200))
            responder.wait_for_client_close()
            return
        status = answer_status(responses[0]) if http_session.stateless else 200
        if status != 200 and not stream.started and len(responses) == 1:
            responder.json_answer(responses[0], None, status)
            return
        for response in responses:
            stream.send(response)
        stream.finish()
    except (StreamClosed, OSError):
        responder.close_connection()
