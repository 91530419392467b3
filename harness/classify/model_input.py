"""What the model reads: the channel of a framework's tool output, derived from the evidence.

A framework adapter captures ``model_view.value``, the tool output exactly as the model receives
it (``docs/adapters.md``, *Framework adapters*). This module compares that value with the result
the server sent (from its journal) and names the **channel** it came from:

- ``empty``: nothing to read: no string with text and no number anywhere (``null``, ``""``,
  ``[]``, a text part whose text is ``"[]"``);
- ``text``: the server's text block(s) (verbatim, or parsed when the text is JSON and differs from
  the structured content), and not the structured content;
- ``structured``: the server's ``structuredContent`` (as a JSON value, or serialized in a string),
  and not the text;
- ``both``: the text and, separately, the structured content;
- ``repr``: a language-level dump of the result object (``TextContent(type='text', ...)``) that
  carries the text or the structured content;
- ``error-text``: neither, and the value speaks of an error: a message the framework or the SDK
  produced instead of the server's content (a validation error, an exception text);
- ``other``: neither, and no error either (a placeholder, a summary).

The server's *text* is its text blocks, a block without a type that has a ``text``, and an embedded
resource's text; :func:`blocks` says, for a result with other blocks, which of its blocks reached the
model at all.

Where the text block is the JSON of the structured content (every schema case but ``diverge``), a
string equal to that text counts as the text; the ``diverge`` case, whose text and structured
content contradict each other, tells the two apart.

An agent host's view of a result whose payload (a content block's text or data) is longer than the
harness keeps whole comes with ``reach`` (``clients/_support/host_measure.mjs`` measures it against the
result the server sent): how much of each such payload the model read, and the host's own words.
A text payload of which the model read anything counts as ``text``; :func:`kept` says how much.

``error_seen`` says whether ``isError`` reached the model: the framework's own error marker on the
tool message (``error_flag``), or the flag itself written into what the model reads
(``is_error=True``, ``"isError": true``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from harness.records import ModelView, Reach

CHANNELS = ("text", "structured", "both", "repr", "error-text", "other", "empty")
REPR = re.compile(r"\b[A-Z][A-Za-z]*\((?:[a-z_]+=)")
ERROR_WORDS = re.compile(
    r"error|exception|invalid|fail|traceback|did not|cannot|could not|unable|unexpected", re.IGNORECASE
)
ERROR_FIELD = re.compile(r"""['"]?is_?error['"]?\s*[:=]\s*\w+""", re.IGNORECASE)
"""An ``isError``/``is_error`` field in a dump: not an error message by itself."""
ISERROR_LITERAL = re.compile(r"""is_?error['"]?\s*[:=]\s*['"]?true""", re.IGNORECASE)
EXCERPT = 140


def strings(value: Any) -> Iterator[str]:
    """Every string inside ``value`` (object keys excluded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def _nodes(value: Any) -> Iterator[Any]:
    """``value`` and every object and array inside it."""
    if isinstance(value, (dict, list)):
        yield value
        for item in value.values() if isinstance(value, dict) else value:
            yield from _nodes(item)


def _layers(value: Any, texts: list[str]) -> list[Any]:
    """``value``, plus the JSON parsed from every string in it that is not a server text block.

    A framework may serialize the content it hands the model into one JSON string (LangChain.js
    does); what the model reads is then inside that string.
    """
    layers = [value]
    for string in strings(value):
        if string in texts or not string.lstrip().startswith(("{", "[")):
            continue
        try:
            parsed = json.loads(string)
        except ValueError:
            continue
        layers.extend(_layers(parsed, texts))
    return layers


NOT_CONTENT = {"type", "id", "tool_call_id", "toolCallId"}
"""Keys whose strings tag or name a part rather than carry what the model reads."""


def _is_json_container(text: str) -> bool:
    try:
        return isinstance(json.loads(text), (dict, list))
    except ValueError:
        return False


def _content_strings(value: Any, texts: list[str]) -> Iterator[str]:
    """The strings that carry content: not tags and ids, and not the JSON strings that
    :func:`_layers` expanded (their parsed layer counts instead)."""
    if isinstance(value, str):
        if value in texts or not _is_json_container(value):
            yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in NOT_CONTENT:
                yield from _content_strings(item, texts)
    elif isinstance(value, list):
        for item in value:
            yield from _content_strings(item, texts)


def _has_numbers(value: Any) -> bool:
    return any(
        isinstance(node, (int, float)) and not isinstance(node, bool)
        for container in _nodes(value)
        for node in (container.values() if isinstance(container, dict) else container)
    )


def _is_empty(layers: list[Any], texts: list[str]) -> bool:
    """Nothing to read: no content string with text in it, no number, in any layer."""
    return not any(
        _has_numbers(layer)
        or any(
            text.strip() and text.strip() not in ("[]", "{}", "null", '""') for text in _content_strings(layer, texts)
        )
        for layer in layers
    )


def _block_text(block: Any) -> Any:
    """A block's text: a text block's (or a block without a type that has one), an embedded resource's."""
    if not isinstance(block, dict):
        return None
    if block.get("type") in ("text", None):
        return block.get("text")
    resource = block.get("resource")
    return resource.get("text") if block.get("type") == "resource" and isinstance(resource, dict) else None


def sent_texts(sent: dict[str, Any] | None) -> list[str]:
    """The non-empty texts of the result the server sent: its text blocks, a block without a type
    that has a text, an embedded resource's text."""
    content = (sent or {}).get("content")
    texts = [_block_text(block) for block in content] if isinstance(content, list) else []
    return [text for text in texts if isinstance(text, str) and text]


BLOCK_PAYLOAD = ("text", "data", "uri")
"""Where a content block carries what it says: its text, its base64 data, the resource it links."""


def _payload(block: dict[str, Any]) -> Any:
    resource: dict[str, Any] = block["resource"] if isinstance(block.get("resource"), dict) else {}
    for value in (*(block.get(key) for key in BLOCK_PAYLOAD), resource.get("text"), resource.get("blob")):
        if value is not None:
            return value
    return None


def blocks(value: Any, sent: dict[str, Any] | None, reach: Reach | None = None) -> str | None:
    """Which of the sent result's content blocks reached the model, when one is not a plain text
    block (``text: yes; resource_link: no``): a block reached it when its payload (text, data, the
    linked URI, an embedded resource's text or blob) is in what the model read, or, for a payload
    longer than the harness keeps, when ``reach`` says part of it was read. None otherwise."""
    content = (sent or {}).get("content")
    if not isinstance(content, list) or all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return None
    found = [string for layer in _layers(value, sent_texts(sent)) for string in strings(layer)]
    kept = {payload["block"]: payload["kept"] > 0 for payload in (reach["payloads"] if reach else [])}
    parts = []
    for index, block in enumerate(content):
        block = block if isinstance(block, dict) else {}
        payload = _payload(block)
        if index in kept:
            reached = kept[index]
        elif isinstance(payload, str) and payload:
            reached = any(payload in string for string in found)
        else:
            reached = None
        label = str(block.get("type", "(no type)"))
        parts.append(f"{label}: {'?' if reached is None else 'yes' if reached else 'no'}")
    return "; ".join(parts)


def _serialized(structured: Any) -> set[str]:
    """The ways a runtime writes ``structured`` into a string."""
    forms = {
        json.dumps(structured),
        json.dumps(structured, separators=(",", ":")),
        json.dumps(structured, ensure_ascii=False),
        repr(structured),
    }
    return {form for form in forms if len(form) > 2}


def _carries_structured(layers: list[Any], sent: dict[str, Any], texts: list[str]) -> bool:
    if "structuredContent" not in sent or sent["structuredContent"] is None:
        return False
    structured = sent["structuredContent"]
    if any(node == structured for layer in layers for node in _nodes(layer)):
        return True
    forms = _serialized(structured)
    for string in (string for layer in layers for string in strings(layer)):
        rest = string
        for text in texts:
            rest = rest.replace(text, "")
        if any(form in rest for form in forms):
            return True
        try:
            if rest.strip() and json.loads(rest) == structured:
                return True
        except ValueError:
            pass
    return False


def _carries_parsed_text(layers: list[Any], sent: dict[str, Any], texts: list[str]) -> bool:
    """A JSON text block the framework parsed (and may have re-serialized: pydantic-ai and smolagents
    do), unless it equals the structured content."""
    parsed = []
    for text in texts:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, (dict, list)) and value != sent.get("structuredContent"):
            parsed.append(value)
    if any(node == value for value in parsed for layer in layers for node in _nodes(layer)):
        return True
    forms = {form for value in parsed for form in _serialized(value)}
    return any(form in string for layer in layers for string in strings(layer) for form in forms)


def _text_reached(reach: Reach | None) -> bool:
    return any(payload["type"] == "text" and payload["kept"] > 0 for payload in (reach["payloads"] if reach else []))


def channel(value: Any, sent: dict[str, Any] | None, reach: Reach | None = None) -> str:
    """The channel of ``value`` relative to the server's result ``sent`` (see the module docstring)."""
    texts = sent_texts(sent)
    layers = _layers(value, texts)
    text_reached = _text_reached(reach)
    if _is_empty(layers, texts) and not text_reached:
        return "empty"
    found = [string for layer in layers for string in strings(layer)]
    has_text = (
        text_reached
        or any(text in string for text in texts for string in found)
        or _carries_parsed_text(layers, sent or {}, texts)
    )
    has_structured = _carries_structured(layers, sent or {}, texts)
    if (has_text or has_structured) and any(REPR.search(string) for string in found):
        return "repr"
    if has_text and has_structured:
        return "both"
    if has_text:
        return "text"
    if has_structured:
        return "structured"
    return "error-text" if any(ERROR_WORDS.search(ERROR_FIELD.sub("", string)) for string in found) else "other"


def error_seen(view: ModelView) -> bool:
    """Whether ``isError`` reached the model: the framework's marker, or the flag in the value."""
    if view.get("error_flag") is True:
        return True
    value = view.get("value")
    flagged = any(
        isinstance(node, dict) and (node.get("isError") is True or node.get("is_error") is True)
        for node in _nodes(value)
    )
    return flagged or any(ISERROR_LITERAL.search(string) for string in strings(value))


def excerpt(value: Any, limit: int = EXCERPT) -> str:
    """A one-line excerpt of what the model reads."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def kept(reach: Reach | None) -> str | None:
    """How much of the long payloads the model read, in words: ``all 9,437,184 characters``,
    ``none of …``, or ``40,000 of 9,437,184 characters (the first 8,000 and the last 32,000)``;
    None without a long payload. One clause per payload, joined by ``; ``."""
    if not reach:
        return None
    clauses = []
    for payload in reach["payloads"]:
        total, got = payload["chars"], payload["kept"]
        what = f"{payload['type']} block {payload['block']}: " if len(reach["payloads"]) > 1 else ""
        if got >= total:
            clauses.append(f"{what}all {total:,} characters")
        elif got == 0:
            clauses.append(f"{what}none of {total:,} characters")
        else:
            head, tail = payload["head"], payload["tail"]
            if head and tail and head + tail == got:
                ends = f" (the first {head:,} and the last {tail:,})"
            elif head == got:
                ends = f" (the first {head:,})"
            elif tail == got:
                ends = f" (the last {tail:,})"
            else:  # a repeating payload's head also matches inside a kept tail: only the count is sure
                ends = ""
            clauses.append(f"{what}{got:,} of {total:,} characters{ends}")
    return "; ".join(clauses)
