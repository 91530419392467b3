"""The boundary probe: bisection logic, and a real bisection against a configured client limit."""

from __future__ import annotations

import json

from harness.boundary import bisect


def test_bisect_finds_the_exact_limit_and_counts_probes():
    limit = 1_234_567
    largest, smallest, probes, rejection = bisect(lambda n: (n <= limit, f"rejected {n}"), 4096, 8_000_000)
    assert (largest, smallest) == (limit, limit + 1)
    assert rejection == f"rejected {limit + 1}"
    assert probes <= 2 + (8_000_000 - 4096).bit_length()


def test_bisect_reports_no_limit_with_one_probe():
    assert bisect(lambda n: (True, ""), 4096, 1 << 20) == (1 << 20, None, 1, None)


def test_bisect_when_even_the_smallest_frame_is_rejected():
    largest, smallest, probes, _ = bisect(lambda n: (False, "no"), 4096, 1 << 20)
    assert (largest, smallest, probes) == (None, 4096, 2)


def test_probe_finds_the_configured_stdio_buffer_limit(checkout):
    """ts-sdk/maxbuf-1mib sets the SDK's maxBufferSize to 1 MiB; the probe must find where it bites."""
    scratch = checkout("raw-jsonrpc", "ts-sdk")
    scratch.harness("run", "--run-id", "b", "--case", "ok", "--adapter", "raw-jsonrpc", "--transport", "stdio")
    scratch.harness("probe", "--run", "b", "--adapter", "ts-sdk", "--adapter", "raw-jsonrpc", "--kind", "text",
                    "--max-bytes", str(2 * 1024 * 1024), timeout=900)
    results = {(r["column"], r["kind"]): r for r in json.loads((scratch.root / "results" / "b" / "boundary.json").read_text())}
    raw = results[("raw-jsonrpc", "text")]
    assert raw["no_limit_up_to"] == 2 * 1024 * 1024 and raw["probes"] == 1
    small = results[("ts-sdk/maxbuf-1mib", "text")]
    assert small["smallest_rejected"] == small["largest_accepted"] + 1
    assert 1_000_000 <= small["largest_accepted"] <= 1_048_576 + 1
    assert results[("ts-sdk/call-only", "text")]["no_limit_up_to"] == 2 * 1024 * 1024
    scratch.harness("report", "--run", "b")
    assert "Largest frame accepted on stdio" in (scratch.root / "reports" / "index.html").read_text()
    assert scratch.processes_left() == []
