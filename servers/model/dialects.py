"""The model APIs the scripted model speaks: one module each, with its ``DIALECT`` (``wire.Dialect``)."""

from __future__ import annotations

import anthropic_messages
import gemini
import openai_chat
import openai_responses
from wire import Body, Dialect, Reply

DIALECTS: tuple[Dialect, ...] = (
    anthropic_messages.DIALECT,
    openai_chat.DIALECT,
    gemini.DIALECT,
    openai_responses.DIALECT,
)


def auxiliary(path: str, body: Body) -> Reply | None:
    """The answer to a request besides a model turn (token counting), from the dialect it belongs to."""
    return next((reply for d in DIALECTS if (reply := d.auxiliary(path, body)) is not None), None)


def for_path(path: str) -> Dialect | None:
    return next((d for d in DIALECTS if d.matches(path)), None)
