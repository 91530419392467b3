"""The scripted model's OpenAI Responses dialect, on a request Codex CLI 0.171.0 really sent.

``fixtures/model/codex-turn.json`` is the body of Codex's third model turn in the ``diverge`` cell
(the developer messages and tool descriptions trimmed): the MCP server's tools offered as the
``mcp__ref`` namespace, both calls made, both ``function_call_output`` items carried back.
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
import openai_responses  # noqa: E402
from script import Answer, Call, Script, Step, next_action  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "model" / "codex-turn.json"
SCRIPT = Script(
    (Step("get_account_balance", {"account_id": "ACC-4471"}), Step("echo", {"text": "follow-up"})),
    "Done.",
)
BALANCE = "mcp__ref__get_account_balance"
ECHO = "mcp__ref__echo"


@pytest.fixture
def turn3() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return body


def earlier(body: dict[str, Any], calls: int) -> dict[str, Any]:
    """The same conversation with only the first ``calls`` calls (and their outputs) made."""
    keep = [item["call_id"] for item in body["input"] if item.get("type") == "function_call"][:calls]
    trimmed = copy.deepcopy(body)
    trimmed["input"] = [item for item in trimmed["input"] if "call_id" not in item or item["call_id"] in keep]
    return trimmed


def sse(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The (event name, data) pairs of a server-sent event stream."""
    events = []
    for chunk in body.decode().split("\n\n"):
        if not chunk.strip():
            continue
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        data = json.loads(fields["data"])
        assert data["type"] == fields["event"]
        events.append((fields["event"], data))
    return events


def test_offered_tools_flatten_the_namespace(turn3: dict[str, Any]) -> None:
    request = openai_responses.parse(turn3)
    assert BALANCE in request.tools and ECHO in request.tools
    assert "exec_command" in request.tools  # plain function tools keep their names
    assert "mcp__ref" not in request.tools  # the namespace itself is no tool
    assert ("mcp__ref", "get_account_balance") in openai_responses.offered(turn3)


def test_called_are_the_replayed_function_calls(turn3: dict[str, Any]) -> None:
    assert openai_responses.parse(turn3).called == (BALANCE, ECHO)
    assert openai_responses.parse(earlier(turn3, 1)).called == (BALANCE,)
    assert openai_responses.parse(earlier(turn3, 0)).called == ()


def test_the_script_runs_through_the_namespace(turn3: dict[str, Any]) -> None:
    first = next_action(SCRIPT, openai_responses.parse(earlier(turn3, 0)), openai_responses.ID_PREFIX)
    assert first == Call(BALANCE, {"account_id": "ACC-4471"}, "call_1", 0)
    second = next_action(SCRIPT, openai_responses.parse(earlier(turn3, 1)), openai_responses.ID_PREFIX)
    assert second == Call(ECHO, {"text": "follow-up"}, "call_2", 1)
    last = next_action(SCRIPT, openai_responses.parse(turn3), openai_responses.ID_PREFIX)
    assert last == Answer("Done.")


def test_streamed_call_carries_the_namespace(turn3: dict[str, Any]) -> None:
    body = earlier(turn3, 0)
    reply = openai_responses.reply(Call(BALANCE, {"account_id": "ACC-4471"}, "call_1"), body, 1, "/v1/responses")
    assert reply.status == 200 and reply.content_type == "text/event-stream"
    events = sse(reply.body)
    names = [name for name, _ in events]
    assert names[0] == "response.created" and names[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in names
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    item = dict(events)["response.output_item.done"]["item"]
    assert item["type"] == "function_call"
    assert (item["namespace"], item["name"], item["call_id"]) == ("mcp__ref", "get_account_balance", "call_1")
    assert json.loads(item["arguments"]) == {"account_id": "ACC-4471"}
    completed = dict(events)["response.completed"]["response"]
    assert completed["status"] == "completed" and completed["output"] == [item]
    # what Codex replayed in the next turn is the item it was sent
    replayed = next(i for i in turn3["input"] if i.get("type") == "function_call")
    assert {k: replayed[k] for k in ("name", "namespace", "call_id")} == {
        k: item[k] for k in ("name", "namespace", "call_id")
    }


def test_streamed_answer_is_an_assistant_message(turn3: dict[str, Any]) -> None:
    events = sse(openai_responses.reply(Answer("Done."), turn3, 3, "/v1/responses").body)
    data = dict(events)
    assert data["response.output_text.delta"]["delta"] == "Done."
    item = data["response.output_item.done"]["item"]
    assert item["type"] == "message" and item["role"] == "assistant"
    assert item["content"] == [{"type": "output_text", "text": "Done.", "annotations": []}]
    assert data["response.completed"]["response"]["usage"]["total_tokens"] == 2


def test_non_streaming_reply_is_the_response_object(turn3: dict[str, Any]) -> None:
    body = {**earlier(turn3, 1), "stream": False}
    reply = openai_responses.reply(Call(ECHO, {"text": "follow-up"}, "call_2"), body, 2, "/v1/responses")
    assert reply.content_type == "application/json"
    response = json.loads(reply.body)
    assert (response["object"], response["status"], response["id"]) == ("response", "completed", "resp_2")
    [item] = response["output"]
    assert (item["namespace"], item["name"], item["call_id"]) == ("mcp__ref", "echo", "call_2")


def test_plain_function_tools_are_called_by_name() -> None:
    body = {
        "stream": False,
        "tools": [{"type": "function", "name": "get_account_balance", "parameters": {}}],
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    }
    request = openai_responses.parse(body)
    assert request.tools == ("get_account_balance",)
    action = next_action(SCRIPT, request, openai_responses.ID_PREFIX)
    assert action == Call("get_account_balance", {"account_id": "ACC-4471"}, "call_1", 0)
    [item] = json.loads(openai_responses.reply(action, body, 1, "/v1/responses").body)["output"]
    assert item["name"] == "get_account_balance" and "namespace" not in item


def test_tool_results_are_the_function_call_outputs(turn3: dict[str, Any]) -> None:
    balance, echo = openai_responses.tool_results(turn3)
    assert (balance["call_id"], balance["tool"], balance["is_error"]) == ("call_1", BALANCE, None)
    assert (echo["call_id"], echo["tool"], echo["is_error"]) == ("call_2", ECHO, None)
    assert balance["block"]["type"] == "function_call_output" and balance["block"]["output"] == balance["content"]
    # diverge: Codex sent the structuredContent (ACC-4471, USD), not the text block (ACC-5518, EUR),
    # after a wall-time header of its own
    header, structured = balance["content"].split("\nOutput:\n")
    assert header.startswith("Wall time: ") and header.endswith(" seconds")
    assert json.loads(structured) == {
        "account_id": "ACC-4471",
        "balance_minor": 4071877,
        "currency": "USD",
        "as_of": "2026-01-15T09:30:00Z",
    }
    # no structuredContent: the content blocks as input_text items, the header first
    assert [part["type"] for part in echo["content"]] == ["input_text", "input_text"]
    assert echo["content"][0]["text"].startswith("Wall time: ")
    assert echo["content"][1]["text"] == "follow-up"


def test_tool_results_report_an_error_flag_only_when_present() -> None:
    body = {
        "input": [
            {"type": "function_call", "call_id": "c", "name": "x", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "boom", "is_error": True},
            {"type": "function_call_output", "call_id": "orphan", "output": "?"},
        ]
    }
    flagged, orphan = openai_responses.tool_results(body)
    assert (flagged["tool"], flagged["is_error"], flagged["content"]) == ("x", True, "boom")
    assert (orphan["tool"], orphan["is_error"]) == (None, None)


@pytest.mark.parametrize(
    "path, mine",
    [
        ("/v1/responses", True),
        ("/responses", True),
        ("/api/codex/responses", True),
        ("/v1/messages", False),
        ("/v1/chat/completions", False),
        ("/v1/responses/compact", False),
    ],
)
def test_paths(path: str, mine: bool) -> None:
    assert openai_responses.DIALECT.matches(path) is mine


def test_registered() -> None:
    assert dialects.for_path("/v1/responses") is openai_responses.DIALECT
    assert dialects.for_path("/v1/messages") is not openai_responses.DIALECT
