"""The protocol axis: which cells exist under each revision, what reaches the adapter and the
server, and the revision a client spoke, read from the server's journal."""

from __future__ import annotations

from pathlib import Path

from harness.classify.outcomes import cells_frame, wire_protocol
from harness.matrix import catalog, cells, manifest

from .conftest import REPO
from .test_classify import record

ADAPTERS = {a.name: a for a in manifest.discover(REPO / "clients")}


def _cells(*names: str, **selection: tuple[str, ...]) -> list[cells.Cell]:
    return cells.build([ADAPTERS[name] for name in names], cells.Selection(**selection))


def test_a_column_runs_the_catalog_under_each_revision_it_declares_and_the_era_case_under_the_others():
    assert "2026-07-28" in ADAPTERS["python-mcp"].protocols
    assert ADAPTERS["ts-sdk"].protocols == ("2025-11-25",)
    modern = _cells("python-mcp", "ts-sdk", protocols=("2026-07-28",))
    declared = {cell.case.id for cell in modern if cell.adapter.name == "python-mcp"}
    assert declared == {case.id for case in catalog.CASES if "2026-07-28" in case.protocols}
    assert {cell.case.id for cell in modern if cell.adapter.name == "ts-sdk"} == set(catalog.ERA_CASES)
    legacy = _cells("python-mcp", protocols=("2025-11-25",))
    assert {cell.case.id for cell in legacy} == {case.id for case in catalog.CASES if "2025-11-25" in case.protocols}
    assert "version-mismatch" not in declared and "resulttype-missing" not in {c.case.id for c in legacy}


def test_a_case_s_cells_under_both_revisions_are_adjacent_and_their_keys_differ():
    both = _cells("raw-jsonrpc", cases=("type-swap",), transports=("stdio",))
    assert [(cell.protocol, cell.schema) for cell in both] == [
        ("2025-11-25", "advertised"),
        ("2025-11-25", "hidden"),
        ("2026-07-28", "advertised"),
        ("2026-07-28", "hidden"),
    ]
    assert len({cell.key for cell in both}) == 4
    assert all(cell.key.endswith("--" + cell.protocol) for cell in both)


def test_the_revision_reaches_the_cell_file_and_the_server_s_command_line(tmp_path: Path):
    cell = _cells("raw-jsonrpc", cases=("ok",), transports=("stdio",), protocols=("2026-07-28",))[0]
    data = cell.to_file(REPO / "servers" / "reference", tmp_path, python="python3")
    assert data["protocol"] == "2026-07-28"
    args = data["server"]["args"]
    assert args[args.index("--protocol") + 1] == "2026-07-28"


def _recv(method: str, protocol: str | None, name: str | None = None) -> dict:
    params = {"name": name} if name else {}
    return {"event": "recv", "kind": "request", "method": method, "id": 1, "params": params, "protocol": protocol}


def test_the_spoken_revision_is_the_case_call_s_else_the_last_request_s():
    dual_era_fallback = [
        _recv("server/discover", "2026-07-28"),
        _recv("initialize", "2025-11-25"),
        _recv("tools/call", "2025-11-25", "get_account_balance"),
    ]
    assert wire_protocol(dual_era_fallback) == "2025-11-25"
    refused_handshake = [_recv("initialize", "2025-06-18")]
    assert wire_protocol(refused_handshake) == "2025-06-18"
    assert wire_protocol([{"event": "start"}]) is None


def test_cells_csv_has_the_asked_and_the_spoken_revision():
    handshake_refused = {**record(None, init_ok=False), "protocol": "2026-07-28"}
    handshake_refused["journal"] = [_recv("initialize", "2025-11-25")]
    row = cells_frame([handshake_refused], {"adapters": {}}).iloc[0]
    assert (row["protocol"], row["wire_protocol"]) == ("2026-07-28", "2025-11-25")
    before_the_axis = record(None)  # a run's record without a protocol
    assert "protocol" not in before_the_axis
    assert cells_frame([before_the_axis], {"adapters": {}}).iloc[0]["protocol"] == "2025-11-25"
