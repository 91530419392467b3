"""The Gemini API (``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` and
``:generateContent``), as Gemini CLI speaks it through ``@google/genai``.

A turn's tools are the ``functionDeclarations`` of its ``tools``; the calls already made are the
``functionCall`` parts of its ``model`` contents, and a tool's result comes back as a
``functionResponse`` part (with the call's ``id`` when the call had one, as the script's calls do).
A streaming turn is answered with one server-sent event holding the whole
``GenerateContentResponse`` (the part, ``finishReason: STOP``, usage), a non-streaming one with that
response as JSON; which of the two a turn is shows only in its path. ``:countTokens`` answers a
fixed count.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from script import Action, Call, Request, as_text
from wire import Body, Dialect, Reply, json_reply, sse_reply

API_VERSIONS = ("v1beta", "v1", "v1alpha")
"""What ``@google/genai`` puts before ``models/`` (``v1beta`` unless the host sets another)."""
TURN_PATH = re.compile(
    rf"/(?:{'|'.join(API_VERSIONS)})/models/(?P<model>[^/:]+):(?P<method>streamGenerateContent|generateContent)"
)
STREAMING = "streamGenerateContent"
ID_PREFIX = "call_"
USAGE = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}

COUNT_TOKENS_PATH = re.compile(rf"/(?:{'|'.join(API_VERSIONS)})/models/[^/:]+:countTokens")


def matches(path: str) -> bool:
    """Whether ``path`` is a model turn."""
    return TURN_PATH.fullmatch(path) is not None


def _contents(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in body.get("contents") or [] if isinstance(c, dict)]


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    parts = content.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def parse(body: dict[str, Any]) -> Request:
    tools = tuple(
        str(declaration.get("name"))
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
        for declaration in tool.get("functionDeclarations") or []
        if isinstance(declaration, dict)
    )
    called = tuple(
        str(part["functionCall"].get("name"))
        for content in _contents(body)
        if content.get("role") == "model"
        for part in _parts(content)
        if isinstance(part.get("functionCall"), dict)
    )
    return Request(tools, called, as_text(body))


def _part(action: Action) -> dict[str, Any]:
    if isinstance(action, Call):
        return {"functionCall": {"id": action.call_id, "name": action.name, "args": dict(action.arguments)}}
    return {"text": action.text}


def response(action: Action, model: str, number: int) -> dict[str, Any]:
    """The ``GenerateContentResponse`` of a turn: the whole of a non-streaming one, the one event of a stream."""
    return {
        "candidates": [{"content": {"role": "model", "parts": [_part(action)]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": USAGE,
        "modelVersion": model,
        "responseId": f"resp_{number}",
    }


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``functionResponse`` part the request carries: what the model reads. The parts that
    follow one in its content up to the next (Gemini CLI attaches a result's image or audio as an
    ``inlineData`` part there) belong to it: its content is then ``[response, *those parts]``."""
    results = []
    for content in _contents(body):
        parts = _parts(content)
        for number, part in enumerate(parts):
            result = part.get("functionResponse")
            if not isinstance(result, dict):
                continue
            attached = list(itertools.takewhile(lambda p: "functionResponse" not in p, parts[number + 1 :]))
            flag = next((result[key] for key in ("isError", "is_error") if key in result), None)
            results.append(
                {
                    "call_id": result.get("id"),
                    "tool": result.get("name"),
                    "content": [result.get("response"), *attached] if attached else result.get("response"),
                    "is_error": flag,
                    "block": part,
                }
            )
    return results


def reply(action: Action, body: Body, number: int, path: str) -> Reply:
    found = TURN_PATH.fullmatch(path)
    model = found["model"] if found else str(body.get("model") or "scripted")
    if found is None or found["method"] == STREAMING:
        return sse_reply(iter([(None, response(action, model, number))]))
    return json_reply(response(action, model, number))


DIALECT = Dialect(
    "gemini",
    matches,
    parse,
    reply,
    ID_PREFIX,
    tool_results,
    lambda path, body: json_reply({"totalTokens": 1}) if COUNT_TOKENS_PATH.fullmatch(path) else None,
)
