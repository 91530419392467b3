"""One fault case per family an adapter runs, for every SDK and framework adapter: what must hold
follows from what the case sends, whatever the client then does with it.

The smoke test holds every adapter to the control case; this one puts each through a case of every
family it runs, and checks what the case itself decides, never an outcome copied from an earlier
run: a call the server never answered, or answered with a JSON-RPC error, cannot have passed; an
``isError`` result reaches an SDK's caller as an error result or a raised call, and a framework
raises it or its model reads it through some channel; a 9 MiB text result was sent whole, and the cell says what the
client made of it. Agent hosts are left out (their cells are whole host runs; tests/test_hosts.py).
"""

from __future__ import annotations

import pytest

from harness.matrix import manifest

from .conftest import REPO

ADAPTERS = sorted(
    adapter.name for adapter in manifest.discover(REPO / "clients") if not adapter.broken and adapter.kind != "host"
)
CASES = {"schema": "iserror-plain", "size": "text-9mib", "transport": "no-response", "protocol": "jsonrpc-error"}
"""The representative case of each family."""
NEVER_PASSES = {
    "no-response": "the server never answers the call",
    "jsonrpc-error": "the call is answered with an error",
}
OUTCOMES = {"pass", "error-result", "reject", "disconnect", "timeout", "crash"}
"""What a cell may come to when the harness did its part (``harness-error`` is the harness failing)."""
NINE_MIB = 9 * 1024 * 1024


@pytest.mark.slow
def test_every_adapter_meets_what_each_familys_case_decides(checkout):
    scratch = checkout(*ADAPTERS)
    named = [arg for name in ADAPTERS for arg in ("--adapter", name)]
    cases = [arg for case in CASES.values() for arg in ("--case", case)]
    selection = (*named, *cases, "--transport", "stdio", "--protocol", "2025-11-25")
    scratch.harness("run", "--run-id", "faults", *selection, "--fresh", timeout=3600)
    rows = scratch.rows("faults")
    records = {(r["column"], r["case"], r["schema"]): r for r in scratch.records("faults")}
    checked: dict[str, set[str]] = {}
    for name in ADAPTERS:
        adapter = manifest.load(REPO / "clients" / name / "adapter.toml")
        families = [family for family in CASES if adapter.families is None or family in adapter.families]
        for variant in adapter.variants:
            column = adapter.column(variant)
            for family in families:
                case = CASES[family]
                for (row_column, row_case, schema), row in rows.items():
                    if (row_column, row_case) != (column, case):
                        continue
                    where = (column, case, schema, row["outcome"], row["error_message"])
                    assert row["outcome"] in OUTCOMES, where
                    record = records[(column, case, schema)]
                    calls = [e for e in record["journal"] if e.get("method") == "tools/call"]
                    assert calls, (where, "the client called the tool")
                    if case in NEVER_PASSES:
                        assert row["outcome"] != "pass", (where, NEVER_PASSES[case])
                    elif case == "iserror-plain" and adapter.kind == "sdk":
                        assert row["outcome"] in ("error-result", "reject"), (where, "the caller saw the error")
                    elif case == "iserror-plain":  # the framework raised it, or its model read it some way
                        assert row["outcome"] in ("error-result", "reject", "pass"), where
                        if row["outcome"] != "reject":
                            assert row["model_channel"] not in ("", None), (where, "the model view was derived")
                    elif case == "text-9mib":
                        sent = [
                            e for e in record["journal"] if e["event"] == "send" and (e.get("bytes") or 0) > NINE_MIB
                        ]
                        assert sent, (where, "the server sent the 9 MiB answer whole")
                    checked.setdefault(column, set()).add(family)
            assert checked.get(column) == set(families), (column, "a cell of every family the adapter runs")
    assert scratch.processes_left() == []
