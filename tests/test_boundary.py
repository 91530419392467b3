"""The boundary probe: the search against fake clients, and a real search for a configured client limit."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest

from harness.probe import boundary
from harness.probe.boundary import MIN_BYTES, Bisection, Verdict, candidates, likely_limits, search

LOW, HIGH = MIN_BYTES, 64 * 1024 * 1024
MEASURED = (10_485_760, 1_048_576, 33_554_432)
"""Limits measured on real clients: the TypeScript SDK's stdio 10 MiB, maxBufferSize 1 MiB, 32 MiB."""
ROUND = (*MEASURED, 10_000_000, 4_194_304)


def reference(accepts: Callable[[int], Verdict], low: int, high: int) -> Bisection:
    """Bisection to the byte, as the probe searched before: high, then low, then halves."""
    probes = 1
    ok, detail = accepts(high)
    if ok:
        return Bisection(high, None, probes, None)
    if ok is None:
        return Bisection(None, None, probes, detail, inconclusive_at=high)
    rejection = detail
    probes += 1
    ok, detail = accepts(low)
    if not ok:
        return Bisection(None, low if ok is False else None, probes, detail, None if ok is False else low)
    while high - low > 1:
        middle = (low + high) // 2
        probes += 1
        ok, detail = accepts(middle)
        if ok is None:
            return Bisection(low, high, probes, rejection, inconclusive_at=middle)
        if ok:
            low = middle
        else:
            high, rejection = middle, detail
    return Bisection(low, high, probes, rejection)


class Client:
    """A fake client with a frame limit (accepts sizes <= limit) that times out on ``timeouts``."""

    def __init__(self, limit: int, timeouts: Callable[[int], bool] = lambda _: False) -> None:
        self.limit = limit
        self.timeouts = timeouts
        self.probed: list[int] = []

    def __call__(self, size: int) -> Verdict:
        self.probed.append(size)
        if self.timeouts(size):
            return None, f"timeout at {size}"
        return (True, f"pass {size}") if size <= self.limit else (False, f"rejected {size}")


def searched(limit: int, low: int = LOW, high: int = HIGH) -> tuple[Bisection, list[int]]:
    client = Client(limit)
    found = search(client, low, high)
    assert found.probes == len(client.probed), "probes counts the runs of accepts"
    assert all(low <= size <= high for size in client.probed), "every probe is within [low, high]"
    assert len(set(client.probed)) == len(client.probed), "no size is probed twice"
    return found, client.probed


def numbers(found: Bisection) -> tuple[int | None, int | None, str | None, int | None]:
    """A result without its probe count: what the report shows."""
    return found.largest_accepted, found.smallest_rejected, found.rejection, found.inconclusive_at


LIMITS = sorted(
    {
        *random.Random(20261129).sample(range(LOW, HIGH), 400),
        *(limit + delta for limit in ROUND for delta in (-2, -1, 0, 1, 2)),
        *(size + delta for size in likely_limits(LOW, HIGH) for delta in (-1, 0, 1)),
        0,
        LOW - 1,
        LOW,
        LOW + 1,
        LOW + 2,
        HIGH - 2,
        HIGH - 1,
        HIGH,
        HIGH + 1,
    }
)


@pytest.mark.parametrize("low, high", [(LOW, HIGH), (LOW, 1 << 20), (LOW, 8_000_000), (LOW, LOW + 5), (100, 100)])
def test_search_gives_the_numbers_of_a_byte_bisection(low, high):
    """Largest accepted = the limit, smallest rejected = limit + 1, its detail, for every kind of limit."""
    limits = LIMITS if (low, high) == (LOW, HIGH) else sorted({*LIMITS, *range(low - 2, low + 8), high - 1, high})
    for limit in limits:
        found, _ = searched(limit, low, high)
        assert numbers(found) == numbers(reference(Client(limit), low, high)), limit


def test_search_names_the_exact_limit():
    found, _ = searched(10_485_760)
    assert found == Bisection(10_485_760, 10_485_761, found.probes, "rejected 10485761")
    assert searched(HIGH)[0] == Bisection(HIGH, None, 1, None)
    assert numbers(searched(LOW - 1)[0]) == (None, LOW, f"rejected {LOW}", None)
    assert numbers(searched(HIGH - 1)[0]) == (HIGH - 1, HIGH, f"rejected {HIGH}", None)


@pytest.mark.parametrize("limit", [*ROUND, 16_777_217])
def test_a_round_limit_takes_at_most_ten_runs(limit):
    """16,777,217: the Go, Java and Kotlin SDKs' 16 Mi-byte (or character) line and its newline."""
    found, probed = searched(limit)
    assert found.largest_accepted == limit and found.probes <= 10, probed


def test_probe_counts():
    """A likely size or the byte above it <= 10 runs, the byte below <= 11, no limit 1; any other
    limit a few more than bisection's 28."""
    likely = likely_limits(LOW, HIGH)
    assert len(likely) == 149 and {1 << 20, 10 << 20, 32 << 20, 10_000_000} <= set(likely)
    assert len(candidates(LOW, HIGH)) == 449
    assert max(searched(size + delta)[0].probes for size in likely for delta in (0, 1)) <= 10
    assert max(searched(size - 1)[0].probes for size in likely) <= 11
    assert searched(HIGH)[0].probes == searched(HIGH + 1)[0].probes == 1
    others = [searched(limit)[0].probes for limit in random.Random(7).sample(range(LOW, HIGH), 200)]
    assert sum(others) / len(others) <= 32 and max(others) <= 34


def test_likely_limits():
    steps = {m << e for m in range(8, 16) for e in (7, 8)}  # 1024, 1152, ..., 3840
    assert likely_limits(1000, 5000) == sorted({*steps, 4096, 4608, 2000, 3000, 4000})
    assert likely_limits(0, 20) == [*range(1, 17), 18]
    assert likely_limits(LOW, LOW + 1) == []


def test_search_when_even_the_smallest_frame_is_rejected():
    found, probed = searched(0, LOW, 1 << 20)
    assert (found.largest_accepted, found.smallest_rejected) == (None, LOW)
    assert probed[0] == 1 << 20 and probed[-1] == LOW


def test_a_timeout_is_inconclusive_not_a_limit():
    """A client that is merely slow above 3 MB must not be reported as limited there."""
    client = Client(5_000_000, timeouts=lambda n: 3_000_000 < n <= 5_000_000)
    found = search(client, LOW, 1 << 23)
    assert found.inconclusive_at is not None and 3_000_000 < found.inconclusive_at <= 5_000_000
    assert found.largest_accepted is not None and found.largest_accepted <= 3_000_000
    assert found.probes == len(client.probed) and client.probed[-1] == found.inconclusive_at


def test_a_timeout_at_high_or_low_is_inconclusive_there():
    for client in (Client(HIGH, timeouts=lambda n: n == HIGH), Client(0, timeouts=lambda n: n == LOW)):
        found = search(client, LOW, HIGH)
        assert numbers(found) == numbers(reference(client, LOW, HIGH))
        assert found.inconclusive_at in (LOW, HIGH) and found.rejection == f"timeout at {found.inconclusive_at}"


def timeout_cases() -> list[tuple[int, int, int]]:
    """(limit, first, last): a client with that limit that times out on sizes first..last."""
    rng = random.Random(5)
    cases = []
    for _ in range(300):
        limit = rng.choice([rng.randrange(LOW, HIGH), rng.choice(ROUND) + rng.choice((-1, 0, 1))])
        first = rng.choice([limit, limit + 1, rng.randrange(LOW, HIGH + 1), rng.choice(likely_limits(LOW, HIGH))])
        cases.append((limit, first, first + rng.choice((0, 0, 1, 1000, HIGH))))
    return cases


@pytest.mark.parametrize("limit, first, last", timeout_cases())
def test_a_timeout_stops_the_search_with_what_is_known(limit, first, last):
    client = Client(limit, timeouts=lambda n: first <= n <= last)
    found = search(client, LOW, HIGH)
    assert found.probes == len(client.probed) and all(LOW <= n <= HIGH for n in client.probed)
    timed_out = [n for n in client.probed if first <= n <= last]
    if found.inconclusive_at is None:
        assert timed_out == []
        assert numbers(found) == numbers(reference(Client(limit), LOW, HIGH))
        return
    assert timed_out == [found.inconclusive_at] == client.probed[-1:], "the first timeout stops the search"
    if found.inconclusive_at in (LOW, HIGH):
        assert numbers(found) == numbers(reference(client, LOW, HIGH))
        assert (found.largest_accepted, found.smallest_rejected) == (None, None)
        return
    accepted = [n for n in client.probed if n <= limit and not first <= n <= last]
    rejected = [n for n in client.probed if n > limit and not first <= n <= last]
    assert found.largest_accepted == max(accepted, default=None)
    assert found.smallest_rejected == min(rejected) and found.rejection == f"rejected {min(rejected)}"
    assert (found.largest_accepted or 0) < found.inconclusive_at < found.smallest_rejected


@pytest.mark.parametrize("limit", [*ROUND, 123_457, LOW])
def test_a_timeout_at_the_limit_or_next_to_it_is_never_a_limit(limit):
    """The search must probe the limit and the byte above it, so a timeout on either is inconclusive."""
    for size in (limit, limit + 1):
        found = search(Client(limit, timeouts=lambda n, size=size: n == size), LOW, HIGH)
        assert found.inconclusive_at == size


def test_the_module_docstring_describes_the_search():
    text = " ".join((boundary.__doc__ or "").split())
    for words in ("likely limits", "m * 2**e", "m * 10**e", "s + 1", "c - 1", "s + 2", "at most 10 runs"):
        assert words in text
    assert "until they are one byte apart" not in text


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
    scratch.cli("report", "--run", "b")
    assert "Largest frame accepted on stdio" in (scratch.root / "reports" / "index.html").read_text()
    assert scratch.processes_left() == []


@pytest.mark.parametrize("kind", boundary.KINDS)
def test_a_probe_frame_is_exact_and_ends_with_its_json_value(kind):
    """The bytes a payload cannot fill are whitespace inside the JSON, never after its value (the Go
    SDK refuses a line with anything after the value, which is no size limit)."""
    import subprocess
    import sys

    from .conftest import REPO

    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from stdio_faults import probe_frame\n"
        "for n in range(4096, 4100):\n"
        "    f = probe_frame(1, sys.argv[2], n)[1]; print(len(f), f.rstrip(b'\\n')[-1:].decode())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "servers" / "reference"), kind],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.split("\n")[:4] == [f"{n} }}" for n in range(4096, 4100)]


def _row(outcome: str) -> dict:
    return {
        "outcome": outcome,
        "error_type": "Elapsed" if outcome == "timeout" else None,
        "error_message": "deadline has elapsed" if outcome == "timeout" else None,
    }


def _logged(message: str) -> dict:
    """An out-of-band error as an adapter records a logged line."""
    return {"type": "LogRecord", "code": None, "message": message}


def test_a_probe_cell_verdict():
    assert boundary.verdict(_row("pass"))[0] is True
    assert boundary.verdict(_row("disconnect"))[0] is False
    slow, detail = boundary.verdict(_row("timeout"))
    assert slow is None and detail == "timeout: Elapsed deadline has elapsed", "a slow read proves no limit"
    dropped = _logged("rmcp::transport::async_rw: Incoming message exceeded the maximum line length")
    shown = f"LogRecord: {dropped['message']}"
    refused, detail = boundary.verdict(_row("timeout"), [dropped])
    assert refused is False and detail.endswith(f"after the client reported: {shown}")
    own = _logged(
        "ERROR io.modelcontextprotocol.kotlin.sdk.shared.Protocol: Request timed out after 18000ms: ToolsCall"
    )
    assert boundary.verdict(_row("timeout"), [own])[0] is None, "the client reporting its own timeout refused nothing"
    refused, detail = boundary.verdict(_row("timeout"), [own, dropped])
    assert refused is False and detail.endswith(f"after the client reported: {shown}")


def test_a_probe_runs_quick_first_and_patient_after_a_bare_timeout():
    """A client that answers within the short budget is run once per size; a slow reader's bare
    timeout is run again patiently, and the rest of its search runs patiently only."""
    runs: list[tuple[int, bool]] = []

    def client(read_s: float, limit: int) -> Callable[[int, bool], Verdict]:
        def run(size: int, patient: bool) -> Verdict:
            runs.append((size, patient))
            budget = 108 if patient else 18
            if min(size, limit + 1) * read_s > budget:  # it reads up to its limit, then refuses
                return None, "timeout"
            return size <= limit, "pass" if size <= limit else "reject"

        return run

    fast = boundary.QuickThenPatient(client(1e-7, 10_485_760))
    found = search(fast, LOW, HIGH)
    assert (found.largest_accepted, found.smallest_rejected) == (10_485_760, 10_485_761)
    assert fast.runs == found.probes == len(runs) and not fast.patient and not any(patient for _, patient in runs)

    runs.clear()
    slow = boundary.QuickThenPatient(client(60 / 16_777_216, 16_777_216))  # 16 MiB in 60 s
    found = search(slow, LOW, HIGH)
    assert found.largest_accepted == 16_777_216 and found.smallest_rejected == 16_777_217
    first_timeout = next(
        i for i, (size, patient) in enumerate(runs) if not patient and min(size, 16_777_217) * 60 / 16_777_216 > 18
    )
    assert runs[first_timeout + 1] == (runs[first_timeout][0], True), "the bare timeout is run again, patiently"
    assert all(patient for _, patient in runs[first_timeout + 1 :])
    assert slow.runs == len(runs) == found.probes + 1
