"""The scripted model (servers/model): its script, the Anthropic dialect, and the real server on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from .conftest import REPO

MODEL = REPO / "servers" / "model"
sys.path.insert(0, str(MODEL))  # the server runs its modules as siblings (python servers/model)

import anthropic_messages as anthropic  # noqa: E402
import script  # noqa: E402

SCRIPT = script.Script(
    (script.Step("get_account_balance", {"account_id": "ACC-4471"}), script.Step("echo", {"text": "follow-up"}))
)


def _request(tools: tuple[str, ...], called: tuple[str, ...] = (), text: str = "") -> script.Request:
    return script.Request(tools, called, text)


def test_the_script_calls_each_step_by_the_name_the_host_exposes_then_answers():
    tools = ("Bash", "mcp__ref__get_account_balance", "mcp__ref__echo")
    first = script.next_action(SCRIPT, _request(tools), "toolu_")
    assert first == script.Call("mcp__ref__get_account_balance", {"account_id": "ACC-4471"}, "toolu_1", 0)
    second = script.next_action(SCRIPT, _request(tools, ("mcp__ref__get_account_balance",)), "toolu_")
    assert second == script.Call("mcp__ref__echo", {"text": "follow-up"}, "toolu_2", 1)
    done = script.next_action(SCRIPT, _request(tools, ("mcp__ref__get_account_balance", "mcp__ref__echo")), "toolu_")
    assert done == script.Answer("Done.")


def test_a_step_repeated_is_made_as_often_as_the_script_says():
    twice = script.Script((SCRIPT.steps[0], SCRIPT.steps[0]))
    tools = ("ref__get_account_balance",)
    assert isinstance(script.next_action(twice, _request(tools, ("ref__get_account_balance",)), "c"), script.Call)
    done = script.next_action(twice, _request(tools, ("ref__get_account_balance",) * 2), "c")
    assert isinstance(done, script.Answer)


def test_deferred_tools_are_loaded_in_one_loader_call_by_the_names_the_request_mentions():
    listing = "The following deferred tools are available:\nmcp__ref__echo\nmcp__ref__get_account_balance\n"
    loader = script.next_action(SCRIPT, _request(("Bash", "ToolSearch"), (), listing), "toolu_")
    assert loader == script.Call(
        "ToolSearch", {"query": "select:mcp__ref__get_account_balance,mcp__ref__echo", "max_results": 2}, "toolu_1"
    )


def test_a_tool_the_host_never_offers_ends_the_run_saying_so():
    answer = script.next_action(SCRIPT, _request(("Bash",)), "toolu_")
    assert isinstance(answer, script.Answer) and "does not offer 'get_account_balance'" in answer.reason


def test_anthropic_requests_offer_a_deferred_tool_once_a_tool_result_referenced_it():
    tools = [
        {"name": "ToolSearch"},
        {"name": "mcp__ref__get_account_balance", "defer_loading": True},
        {"name": "DeferredToolPlaceholder", "defer_loading": True},
    ]
    before = anthropic.parse({"tools": tools, "messages": [{"role": "user", "content": "hi"}]})
    assert before.tools == ("ToolSearch",)
    loaded = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "tool_reference", "tool_name": "mcp__ref__get_account_balance"}],
            }
        ],
    }
    asked = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {}}]}
    after = anthropic.parse({"tools": tools, "messages": [{"role": "user", "content": "hi"}, asked, loaded]})
    assert after.tools == ("ToolSearch", "mcp__ref__get_account_balance") and after.called == ("ToolSearch",)
    (result,) = anthropic.tool_results({"messages": [asked, loaded]})
    assert result["tool"] == "ToolSearch" and result["call_id"] == "toolu_1"


def test_an_anthropic_stream_is_a_tool_use_then_the_stop_events():
    call = script.Call("mcp__ref__echo", {"text": "x"}, "toolu_2")
    events = list(anthropic.events(call, "m", 3))
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[1][1]["content_block"]["name"] == "mcp__ref__echo"
    assert json.loads(events[2][1]["delta"]["partial_json"]) == {"text": "x"}
    assert events[4][1]["delta"]["stop_reason"] == "tool_use"
    assert anthropic.message(script.Answer("Done."), "m", 4)["stop_reason"] == "end_turn"


@pytest.fixture
def model_server(tmp_path: Path):
    (tmp_path / "script.json").write_text(json.dumps({"steps": [{"tool": "echo", "arguments": {"text": "t"}}]}))
    journal = tmp_path / "model.jsonl"
    argv = [sys.executable, "-S", str(MODEL), "--script", str(tmp_path / "script.json"), "--journal", str(journal)]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        url = json.loads(server.stdout.readline())["url"] if server.stdout else ""
        yield url, journal
    finally:
        server.terminate()
        server.wait(timeout=10)


def _post(url: str, body: dict, key: str = "sk-dummy") -> tuple[int, str]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json", "x-api-key": key}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_server_answers_a_turn_and_journals_it_whole_without_the_key(model_server):
    url, journal = model_server
    body = {"model": "m", "stream": True, "tools": [{"name": "mcp__ref__echo"}], "messages": []}
    status, text = _post(url + "/v1/messages?beta=true", body)
    assert status == 200 and "event: message_start" in text and '"name": "mcp__ref__echo"' in text
    assert _post(url + "/v1/elsewhere", {})[0] == 404
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [e["event"] for e in entries] == ["start", "connection", "turn", "connection", "request"]
    turn = entries[2]
    assert turn["body"] == body and turn["dialect"] == "anthropic-messages"
    assert turn["action"] == {"call": "mcp__ref__echo", "arguments": {"text": "t"}, "call_id": "toolu_1", "step": 0}
    assert turn["exposed"] == {"echo": "mcp__ref__echo"}
    assert turn["headers"]["X-Api-Key"] == "<redacted>"
    assert all(e["peer"].startswith("127.0.0.1:") for e in entries if e["event"] == "connection")


def test_a_bad_script_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "script.json").write_text("{}")
    done = subprocess.run(
        [sys.executable, "-S", str(MODEL), "--script", str(tmp_path / "script.json"), "--journal", str(tmp_path / "j")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not a script" in done.stderr
