"""Reading an adapter's observation file: large ones on one thread, elided, errors naming the file."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.run import observation


def _observation(text: str) -> dict:
    step = {"status": "ok", "error": None, "duration_ms": 1.0}
    call = {"tool": "get_account_balance", "status": "returned", "error": None, "duration_ms": 2.0}
    return {
        "contract": 1,
        "package_version": "1.0.0",
        "runtime_version": "3.11",
        "initialize": step,
        "list_tools": None,
        "calls": [{**call, "result": {"content": [{"type": "text", "text": text}]}}],
        "followup": None,
        "transport_errors": [],
        "close": step,
    }


def _reads_by_thread(monkeypatch: pytest.MonkeyPatch, paths: list[Path]) -> list[str]:
    """Read ``paths`` from eight threads at once; the name of the thread that parsed each."""
    parsed_on: list[str] = []
    parse = observation._read

    def recording(path: Path, shown: Path, framework: bool) -> observation.Observation:
        parsed_on.append(threading.current_thread().name)
        return parse(path, shown, framework)

    monkeypatch.setattr(observation, "_read", recording)
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="cell") as cells:
        read = list(cells.map(observation.read, paths))
    text = read[0]["calls"][0]["result"]["content"][0]["text"]
    assert len(text) < 10_000, "a large text is elided"
    return parsed_on


def test_large_observations_are_read_on_one_thread_and_small_ones_where_they_finish(tmp_path, monkeypatch):
    large = tmp_path / "large.json"
    large.write_text(json.dumps(_observation("x" * (2 * observation.LARGE_BYTES))))
    small = tmp_path / "small.json"
    small.write_text(json.dumps(_observation("x" * 100)))

    on = _reads_by_thread(monkeypatch, [large] * 8)
    assert len(on) == 8 and {name.split("_")[0] for name in on} == {"large-observations"}

    on = _reads_by_thread(monkeypatch, [small] * 8)
    assert {name.split("_")[0] for name in on} == {"cell"}


def test_a_large_file_that_is_not_json_names_the_file_and_how_it_starts(tmp_path):
    broken = tmp_path / "observation.raw.json"
    broken.write_bytes(b'{"contract": 1, "calls": ["' + b"y" * observation.LARGE_BYTES + b"\xff")
    with pytest.raises(observation.ObservationError) as raised:
        observation.read(broken, label=Path("observation.raw.json"))
    message = str(raised.value)
    assert message.startswith("observation.raw.json: not valid JSON (")
    assert 'starts with \'{"contract": 1, "calls": ["yyy' in message
