"""The boundary probe: bisection logic, and a real bisection against a configured client limit."""

from __future__ import annotations

import json

from harness.boundary import Bisection, bisect


def test_bisect_finds_the_exact_limit_and_counts_probes():
    limit = 1_234_567
    found = bisect(lambda n: (n <= limit, f"rejected {n}"), 4096, 8_000_000)
    assert (found.largest_accepted, found.smallest_rejected) == (limit, limit + 1)
    assert found.rejection == f"rejected {limit + 1}"
    assert found.probes <= 2 + (8_000_000 - 4096).bit_length()


def test_bisect_reports_no_limit_with_one_probe():
    assert bisect(lambda n: (True, ""), 4096, 1 << 20) == Bisection(1 << 20, None, 1, None)


def test_bisect_when_even_the_smallest_frame_is_rejected():
    found = bisect(lambda n: (False, "no"), 4096, 1 << 20)
    assert (found.largest_accepted, found.smallest_rejected, found.probes) == (None, 4096, 2)


def test_a_timeout_is_inconclusive_not_a_limit():
    """A client that is merely slow above 3 MB must not be reported as limited there."""

    def accepts(n: int) -> tuple[bool | None, str]:
        if n > 5_000_000:
            return False, "rejected"
        return (None, "timeout") if n > 3_000_000 else (True, "")

    found = bisect(accepts, 4096, 1 << 23)
    assert found.inconclusive_at is not None and 3_000_000 < found.inconclusive_at <= 5_000_000
    assert found.largest_accepted is not None and found.largest_accepted <= 3_000_000


def test_probe_finds_the_configured_stdio_buffer_limit(checkout):
    """ts-sdk/maxbuf-1mib sets the SDK's maxBufferSize to 1 MiB; the probe must find where it bites."""
    scratch = checkout("raw-jsonrpc", "ts-sdk")
    scratch.harness("run", "--run-id", "b", "--case", "ok", "--adapter", "raw-jsonrpc", "--transport", "stdio")
    scratch.harness(
        "probe",
        "--run",
        "b",
        "--adapter",
        "ts-sdk",
        "--adapter",
        "raw-jsonrpc",
        "--kind",
        "text",
        "--max-bytes",
        str(2 * 1024 * 1024),
        timeout=900,
    )
    results = {
        (r["column"], r["kind"]): r for r in json.loads((scratch.root / "results" / "b" / "boundary.json").read_text())
    }
    raw = results[("raw-jsonrpc", "text")]
    assert raw["no_limit_up_to"] == 2 * 1024 * 1024 and raw["probes"] == 1
    small = results[("ts-sdk/maxbuf-1mib", "text")]
    assert small["smallest_rejected"] == small["largest_accepted"] + 1
    assert 1_000_000 <= small["largest_accepted"] <= 1_048_576 + 1
    assert results[("ts-sdk/call-only", "text")]["no_limit_up_to"] == 2 * 1024 * 1024
    scratch.harness("report", "--run", "b")
    assert "Largest frame accepted on stdio" in (scratch.root / "reports" / "index.html").read_text()
    assert scratch.processes_left() == []
