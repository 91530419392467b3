"""Agent frameworks end to end: a Python one (pydantic-ai) and a Node one (the AI SDK), each
running its own agent loop offline against the real reference server, and the model view the
harness derives from what they handed their scripted model.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

CASES = ("ok", "diverge", "iserror-plain", "type-swap", "missing-content")


def test_the_model_view_of_a_python_and_a_node_framework(checkout):
    scratch = checkout("pydantic-ai", "ai-sdk")
    selection = [arg for case in CASES for arg in ("--case", case)]
    scratch.harness("run", "--run-id", "frameworks", *selection, "--protocol", "2025-11-25", timeout=1500)
    rows = scratch.rows("frameworks")
    assert len(rows) == len(CASES) * 2 * (3 + 2), "3 pydantic-ai and 2 ai-sdk columns, both schema modes"
    for row in rows.values():
        assert row["kind"] == "framework"
        assert str(row["model_aborted"]) == str(row["outcome"] in ("reject", "disconnect"))
        assert row["outcome"] not in ("crash", "harness-error", "timeout"), row
        if row["outcome"] in ("pass", "error-result"):
            assert row["model_channel"], f"{row['key']}: a returned call without a model view"

    # diverge: text and structuredContent contradict; which one each framework hands the model
    for schema in ("advertised", "hidden"):
        assert rows[("pydantic-ai/default", "diverge", schema)]["model_channel"] == "structured"
        assert rows[("ai-sdk/default", "diverge", schema)]["model_channel"] == "text"
        assert "ACC-5518" in rows[("ai-sdk/default", "diverge", schema)]["model_excerpt"]
    assert rows[("ai-sdk/output-schema", "diverge", "advertised")]["model_channel"] == "structured"

    # isError: pydantic-ai marks the tool return as failed; the AI SDK hands the text over unmarked
    assert rows[("pydantic-ai/errors-failed", "iserror-plain", "advertised")]["model_error_seen"] in (True, "True")
    assert rows[("ai-sdk/default", "iserror-plain", "advertised")]["model_error_seen"] in (False, "False")
    assert rows[("ai-sdk/default", "iserror-plain", "advertised")]["model_channel"] == "text"

    page = (scratch.root / "reports" / "model-view.html").read_text()
    assert "pydantic-ai/errors-failed" in page and "ai-sdk/output-schema" in page
    index = (scratch.root / "reports" / "index.html").read_text()
    assert 'href="model-view.html"' in index
    assert "pydantic-ai/default" not in index, "framework columns live on the model-view page"
    assert scratch.processes_left() == []
