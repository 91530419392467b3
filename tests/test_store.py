"""The results store: a killed run's ``cells.jsonl`` (a torn last line, a repeated key) is compacted for resume."""

from __future__ import annotations

import json

from harness.run.store import RunStore


def _line(record: dict) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def test_compact_drops_a_torn_line_cut_inside_a_character(tmp_path):
    store = RunStore(tmp_path / "run")
    store.create()
    store.append({"key": "a", "error_message": "ok"})
    torn = _line({"key": "b", "error_message": "残高を取得できません"})
    cut = torn.index("高".encode()) + 1  # a write killed one byte into a 3-byte character
    with open(store.records_path, "ab") as out:
        out.write(torn[:cut])
    assert store.compact() == {"a"}
    assert [record["key"] for record in store.records()] == ["a"]
    store.append({"key": "b", "error_message": "残高"})
    assert [record["key"] for record in store.records()] == ["a", "b"], "the next record starts on a line of its own"


def test_compact_keeps_the_first_record_of_a_repeated_key(tmp_path):
    store = RunStore(tmp_path / "run")
    store.create()
    for record in ({"key": "a", "n": 1}, {"key": "b", "n": 2}, {"key": "a", "n": 3}):
        store.append(record)
    with open(store.records_path, "ab") as out:
        out.write(_line({"key": "c", "n": 4})[:10])
    assert store.compact() == {"a", "b"}
    assert list(store.records()) == [{"key": "a", "n": 1}, {"key": "b", "n": 2}]
    assert store.records_path.read_bytes().endswith(b"\n")
