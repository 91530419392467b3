"""The scripted model's OpenAI Chat Completions dialect, on requests Qwen Code and opencode really sent.

Each fixture is the body of a host's last model turn in the ``diverge`` cell (the reference server
as MCP server ``ref``; system prompts, reminders and built-in tools' descriptions and schemas
trimmed): ``fixtures/model/qwen-turn.json`` from Qwen Code 0.24.4, whose MCP tools are deferred
behind ``tool_search`` and called through ``tool_call``; ``fixtures/model/opencode-turn.json`` from
opencode 1.18.33 (``@ai-sdk/openai-compatible``), which offers them as ``ref_<tool>``. A host's
earlier turns are the same body with fewer messages.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

MODEL = Path(__file__).resolve().parent.parent / "servers" / "model"
if str(MODEL) not in sys.path:  # the server runs its modules as siblings
    sys.path.insert(0, str(MODEL))

import dialects  # noqa: E402
import openai_chat  # noqa: E402
from script import Answer, Call, Script, Step, next_action  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "model"
SCRIPT = Script(
    (Step("get_account_balance", {"account_id": "ACC-4471"}), Step("echo", {"text": "follow-up"})),
    "Done.",
)
STRUCTURED = '{"account_id":"ACC-4471","balance_minor":4071877,"currency":"USD","as_of":"2026-01-15T09:30:00Z"}'
TEXT = '{"account_id": "ACC-5518", "balance_minor": 129900, "currency": "EUR", "as_of": "2026-01-15T09:30:00Z"}'
"""The ``diverge`` case's CallToolResult: ``structuredContent`` (compact, as Qwen serializes it) and text."""


def load(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return body


@pytest.fixture
def qwen() -> dict[str, Any]:
    return load("qwen-turn.json")


@pytest.fixture
def opencode() -> dict[str, Any]:
    return load("opencode-turn.json")


def earlier(body: dict[str, Any], calls: int) -> dict[str, Any]:
    """The same conversation before the model's ``calls + 1``-th call (each call one assistant message)."""
    messages = body["messages"]
    assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    trimmed = copy.deepcopy(body)
    trimmed["messages"] = messages[: assistants[calls]] if calls < len(assistants) else messages
    return trimmed


def sse(body: bytes) -> list[Any]:
    """The data of each ``data:`` line of a stream (``[DONE]`` as the string)."""
    events = []
    for chunk in body.decode().split("\n\n"):
        if chunk.strip():
            assert chunk.startswith("data: ") and "\n" not in chunk
            data = chunk[len("data: ") :]
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def streamed(action: Call | Answer, body: dict[str, Any], number: int = 1) -> list[Any]:
    reply = openai_chat.reply(action, body, number, "/v1/chat/completions")
    assert (reply.status, reply.content_type) == (200, "text/event-stream")
    return sse(reply.body)


def sent_call(events: list[Any]) -> dict[str, Any]:
    """The one tool call a stream carries, as the host reassembles it."""
    calls = [c for e in events[:-1] for choice in e["choices"] for c in choice["delta"].get("tool_calls") or []]
    assert len(calls) == 1
    call: dict[str, Any] = calls[0]
    return call


def finish(events: list[Any]) -> list[str]:
    return [c["finish_reason"] for e in events[:-1] for c in e["choices"] if c["finish_reason"]]


def test_the_dialect_owns_chat_completions_paths_under_any_base() -> None:
    assert dialects.for_path("/v1/chat/completions") is openai_chat.DIALECT
    assert openai_chat.matches("/chat/completions")
    assert openai_chat.matches("/api/paas/v4/chat/completions")
    assert not openai_chat.matches("/v1/completions")
    assert dialects.for_path("/v1/messages") is not openai_chat.DIALECT
    assert openai_chat.DIALECT.id_prefix == "call_"
    assert openai_chat.DIALECT.auxiliary("/v1/models", {}) is None  # neither host requests anything else


# Qwen Code: tool_search, then the MCP tools through tool_call


def test_qwen_first_turn_offers_only_the_bridge_so_the_model_loads_the_mentioned_tools(qwen: dict[str, Any]) -> None:
    first = earlier(qwen, 0)
    request = openai_chat.parse(first)
    assert {"tool_search", "tool_call"} <= set(request.tools)
    assert not [t for t in request.tools if t.startswith("mcp__")]
    assert request.called == ()
    action = next_action(SCRIPT, request, openai_chat.ID_PREFIX)
    assert action == Call(
        "tool_search", {"query": "select:mcp__ref__get_account_balance,mcp__ref__echo", "max_results": 2}, "call_1"
    )
    call = sent_call(streamed(action, first))
    sent = qwen["messages"][2]["tool_calls"][0]  # what Qwen Code put back in the history
    assert (call["id"], call["function"]["name"]) == (sent["id"], sent["function"]["name"]) == ("call_1", "tool_search")
    assert json.loads(call["function"]["arguments"]) == json.loads(sent["function"]["arguments"])


def test_qwen_tools_the_loader_returned_are_offered_and_called_through_tool_call(qwen: dict[str, Any]) -> None:
    second = earlier(qwen, 1)
    request = openai_chat.parse(second)
    assert {"mcp__ref__get_account_balance", "mcp__ref__echo"} <= set(request.tools)
    assert request.called == ("tool_search",)
    action = next_action(SCRIPT, request, openai_chat.ID_PREFIX)
    assert action == Call("mcp__ref__get_account_balance", {"account_id": "ACC-4471"}, "call_2", 0)
    events = streamed(action, second, 2)
    call = sent_call(events)
    assert (call["id"], call["type"], call["function"]["name"]) == ("call_2", "function", "tool_call")
    assert json.loads(call["function"]["arguments"]) == {
        "name": "mcp__ref__get_account_balance",
        "arguments": {"account_id": "ACC-4471"},
    }
    # what Qwen Code sent back as the assistant's call is what the model sent
    echoed = qwen["messages"][4]["tool_calls"][0]
    assert (echoed["id"], echoed["function"]["name"]) == ("call_2", "tool_call")
    assert json.loads(echoed["function"]["arguments"]) == json.loads(call["function"]["arguments"])
    assert finish(events) == ["tool_calls"]


def test_qwen_bridge_calls_count_as_calls_to_their_target(qwen: dict[str, Any]) -> None:
    third = earlier(qwen, 2)
    action = next_action(SCRIPT, openai_chat.parse(third), openai_chat.ID_PREFIX)
    assert action == Call("mcp__ref__echo", {"text": "follow-up"}, "call_3", 1)
    request = openai_chat.parse(qwen)
    assert request.called == ("tool_search", "mcp__ref__get_account_balance", "mcp__ref__echo")
    assert next_action(SCRIPT, request, openai_chat.ID_PREFIX) == Answer("Done.")


def test_qwen_tool_results_are_the_tool_messages_named_by_their_target(qwen: dict[str, Any]) -> None:
    results = openai_chat.tool_results(qwen)
    assert [(r["call_id"], r["tool"]) for r in results] == [
        ("call_1", "tool_search"),
        ("call_2", "mcp__ref__get_account_balance"),
        ("call_3", "mcp__ref__echo"),
    ]
    balance = results[1]
    assert balance["block"] is qwen["messages"][5]
    assert balance["content"] is qwen["messages"][5]["content"]
    assert balance["content"] == [{"type": "text", "text": STRUCTURED + "\n" + TEXT}]
    assert balance["is_error"] is None
    assert results[2]["content"] == [{"type": "text", "text": "follow-up"}]


def test_the_final_answer_streams_as_content_with_stop_and_usage_when_asked(qwen: dict[str, Any]) -> None:
    events = streamed(Answer("Done."), qwen, 4)
    assert events[-1] == "[DONE]"
    assert events[0]["object"] == "chat.completion.chunk" and events[0]["model"] == "scripted"
    assert "".join(c["delta"].get("content") or "" for e in events[:-1] for c in e["choices"]) == "Done."
    assert finish(events) == ["stop"]
    assert events[-2]["choices"] == [] and events[-2]["usage"]["total_tokens"] == 2
    without = copy.deepcopy(qwen)
    del without["stream_options"]
    assert all("usage" not in e for e in streamed(Answer("Done."), without)[:-1])


# opencode: the MCP tools offered as ref_<tool>


def test_opencode_calls_the_mcp_tool_under_its_exposed_name(opencode: dict[str, Any]) -> None:
    first = earlier(opencode, 0)
    request = openai_chat.parse(first)
    assert {"ref_get_account_balance", "ref_echo"} <= set(request.tools)
    action = next_action(SCRIPT, request, openai_chat.ID_PREFIX)
    assert action == Call("ref_get_account_balance", {"account_id": "ACC-4471"}, "call_1", 0)
    call = sent_call(streamed(action, first))
    assert call["index"] == 0 and call["type"] == "function"
    sent = opencode["messages"][2]["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == (sent["id"], sent["function"]["name"])
    assert json.loads(call["function"]["arguments"]) == json.loads(sent["function"]["arguments"])


def test_opencode_last_turn_has_both_results_and_gets_the_answer(opencode: dict[str, Any]) -> None:
    request = openai_chat.parse(opencode)
    assert request.called == ("ref_get_account_balance", "ref_echo")
    assert next_action(SCRIPT, request, openai_chat.ID_PREFIX) == Answer("Done.")
    results = openai_chat.tool_results(opencode)
    assert [(r["call_id"], r["tool"], r["content"], r["is_error"]) for r in results] == [
        ("call_1", "ref_get_account_balance", TEXT, None),
        ("call_2", "ref_echo", "follow-up", None),
    ]
    assert results[0]["block"] is opencode["messages"][3]


def test_a_request_without_tools_is_answered(opencode: dict[str, Any]) -> None:
    title = {"model": "scripted", "messages": opencode["messages"][:2], "stream": True}
    action = next_action(SCRIPT, openai_chat.parse(title), openai_chat.ID_PREFIX)
    assert isinstance(action, Answer) and action.text == "Done." and "no tools" in action.reason


def test_non_streaming_replies_are_one_completion(opencode: dict[str, Any]) -> None:
    body = earlier(opencode, 0)
    body["stream"] = False
    call = Call("ref_get_account_balance", {"account_id": "ACC-4471"}, "call_1")
    reply = openai_chat.reply(call, body, 7, "/v1/chat/completions")
    assert (reply.status, reply.content_type) == (200, "application/json")
    completion = json.loads(reply.body)
    assert completion["object"] == "chat.completion" and completion["id"] == "chatcmpl-7"
    (choice,) = completion["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "ref_get_account_balance", "arguments": '{"account_id": "ACC-4471"}'},
        }
    ]
    answer = json.loads(openai_chat.reply(Answer("Done."), body, 8, "/v1/chat/completions").body)
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "Done."}
    assert answer["choices"][0]["finish_reason"] == "stop" and answer["usage"]["total_tokens"] == 2
