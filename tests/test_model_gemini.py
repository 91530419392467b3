"""The scripted model's Gemini dialect, on a request Gemini CLI 0.61.0 sent it (``fixtures/model/gemini-turn.json``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

MODEL = Path(__file__).resolve().parent.parent / "servers" / "model"
if str(MODEL) not in sys.path:  # the server runs its modules as siblings
    sys.path.insert(0, str(MODEL))

import dialects  # noqa: E402
import gemini  # noqa: E402
from script import Answer, Call, Script, Step, next_action  # noqa: E402

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "model" / "gemini-turn.json").read_text())
BODY = FIXTURE["body"]
STREAM_PATH = FIXTURE["path"].split("?")[0]
SCRIPT = Script(
    (Step("get_account_balance", {"account_id": "ACC-4471"}), Step("echo", {"text": "follow-up"})),
    "Done.",
)


def _until(turns: int) -> dict:
    """The fixture's request as it was ``turns`` model turns earlier (its first contents only)."""
    return {**BODY, "contents": BODY["contents"][: 1 + 2 * turns]}


def _events(body: bytes) -> list[dict]:
    lines = body.decode().split("\n\n")
    assert lines[-1] == ""
    assert all(line.startswith("data: ") for line in lines[:-1])
    return [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]


def test_the_generate_paths_are_turns_and_others_are_not():
    assert gemini.matches("/v1beta/models/gemini-2.5-pro:streamGenerateContent")
    assert gemini.matches("/v1beta/models/gemini-3.5-flash-lite:generateContent")
    assert not gemini.matches("/v1beta/models/gemini-2.5-pro:countTokens")
    assert not gemini.matches("/v1beta/models")
    assert not gemini.matches("/v1/messages")
    assert dialects.for_path(STREAM_PATH) is gemini.DIALECT


def test_parse_reads_the_offered_tools_and_the_calls_made():
    request = gemini.parse(BODY)
    assert "mcp_ref_get_account_balance" in request.tools
    assert "mcp_ref_echo" in request.tools
    assert "run_shell_command" in request.tools
    assert request.called == ("mcp_ref_get_account_balance", "mcp_ref_echo")
    assert "ACC-4471" in request.text


@pytest.mark.parametrize(
    "turns, expected",
    [
        (0, Call("mcp_ref_get_account_balance", {"account_id": "ACC-4471"}, "call_1", 0)),
        (1, Call("mcp_ref_echo", {"text": "follow-up"}, "call_2", 1)),
        (2, Answer("Done.")),
    ],
)
def test_the_script_goes_on_from_each_turn(turns, expected):
    assert next_action(SCRIPT, gemini.parse(_until(turns)), gemini.ID_PREFIX) == expected


def test_a_streaming_turn_is_one_event_with_the_function_call_and_stop():
    assert gemini.matches(STREAM_PATH)
    action = Call("mcp_ref_get_account_balance", {"account_id": "ACC-4471"}, "call_1")
    reply = gemini.reply(action, _until(0), 1, STREAM_PATH)
    assert (reply.status, reply.content_type) == (200, "text/event-stream")
    [event] = _events(reply.body)
    [candidate] = event["candidates"]
    assert candidate["content"] == {
        "role": "model",
        "parts": [{"functionCall": {"id": "call_1", "name": action.name, "args": {"account_id": "ACC-4471"}}}],
    }
    assert candidate["finishReason"] == "STOP"
    assert event["modelVersion"] == "gemini-2.5-pro"


def test_the_answer_is_a_text_part():
    [event] = _events(gemini.reply(Answer("Done."), BODY, 3, STREAM_PATH).body)
    assert event["candidates"][0]["content"]["parts"] == [{"text": "Done."}]
    assert event["candidates"][0]["finishReason"] == "STOP"


def test_a_non_streaming_turn_is_answered_as_json():
    path = "/v1beta/models/gemini-3.5-flash-lite:generateContent"
    assert gemini.matches(path)
    reply = gemini.reply(Answer("Done."), {"contents": BODY["contents"][:1]}, 4, path)
    assert (reply.status, reply.content_type) == (200, "application/json")
    response = json.loads(reply.body)
    assert response["candidates"][0]["content"]["parts"] == [{"text": "Done."}]
    assert response["modelVersion"] == "gemini-3.5-flash-lite"


def test_tool_results_are_the_function_responses_as_sent():
    balance, echo = gemini.tool_results(BODY)
    assert balance["call_id"] == "call_1"
    assert balance["tool"] == "mcp_ref_get_account_balance"
    assert balance["is_error"] is None
    assert balance["block"] == BODY["contents"][2]["parts"][0]
    assert balance["content"] == BODY["contents"][2]["parts"][0]["functionResponse"]["response"]
    # Gemini CLI's model view of the diverge case: the text block only, wrapped; structuredContent dropped
    text = FIXTURE["call_tool_result"]["content"][0]["text"]
    assert balance["content"] == {"output": f"<untrusted_context>\n{text}\n</untrusted_context>"}
    assert "ACC-4471" not in balance["content"]["output"]
    assert (echo["call_id"], echo["tool"]) == ("call_2", "mcp_ref_echo")
    assert echo["content"] == {"output": "<untrusted_context>\nfollow-up\n</untrusted_context>"}
    assert gemini.tool_results(_until(0)) == []


def test_an_error_flag_on_the_function_response_is_reported():
    part = {"functionResponse": {"id": "x", "name": "t", "response": {"error": "boom"}, "isError": True}}
    [result] = gemini.tool_results({"contents": [{"role": "user", "parts": [part]}]})
    assert result["is_error"] is True


def test_the_parts_gemini_cli_attaches_after_a_function_response_are_part_of_its_result():
    """Gemini CLI 0.61.0 hands an image result over as a placeholder in the functionResponse and the
    image as an ``inlineData`` part after it (measured: the size family's blob cases)."""
    placeholder = {"output": "[Tool 'get_account_balance' provided the following image data with mime-type: image/png]"}
    image = {"inlineData": {"data": "iVBORw0KGgo", "mimeType": "image/png"}}
    parts = [
        {"functionResponse": {"id": "a", "name": "t", "response": placeholder}},
        image,
        {"functionResponse": {"id": "b", "name": "echo", "response": {"output": "hi"}}},
    ]
    first, second = gemini.tool_results({"contents": [{"role": "user", "parts": parts}]})
    assert first["content"] == [placeholder, image]
    assert second["content"] == {"output": "hi"}


def test_count_tokens_is_answered():
    answer = dialects.auxiliary("/v1beta/models/gemini-2.5-pro:countTokens", {})
    assert answer is not None and json.loads(answer.body) == {"totalTokens": 1}
    assert dialects.auxiliary("/v1beta/models/gemini-2.5-pro:embedContent", {}) is None
