"""The command line as a new user meets it: every bad input is one line, a documented exit code,
and nothing written; broken adapters are reported and never stop the others."""

from __future__ import annotations

import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from fcntl import ioctl
from pathlib import Path

import pytest

from harness import cli
from harness.matrix import catalog
from harness.run import meta

from .conftest import REPO

LEGACY = ("--protocol", "2025-11-25")

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def assert_one_line_error(done: subprocess.CompletedProcess[str], *needles: str, code: int = 2) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])


def test_jobs_must_be_positive(checkout):
    scratch = checkout("raw-jsonrpc")
    for jobs in ("0", "-1", "two"):
        done = scratch.harness("run", "--case", "ok", "--jobs", jobs, check=False, timeout=30)
        assert done.returncode == 2 and "--jobs" in done.stderr and "expected a positive whole number" in done.stderr
    assert not (scratch.root / "results").exists()


def test_a_run_keeps_one_cell_more_than_the_cores_at_work_and_the_probe_does_not():
    """Cells take turns with their servers, so a run fills the cores with one more; a probe cell reads
    one large frame from start to end."""
    cores = meta.cpu_count()
    assert cli.parser().parse_args(["run"]).jobs == cores + 1
    assert cli.parser().parse_args(["probe"]).jobs == cores
    assert cli.parser().parse_args(["run", "--jobs", "1"]).jobs == 1


def test_unknown_kind_and_empty_selection_write_nothing(checkout):
    scratch = checkout("raw-jsonrpc")
    scratch.harness("run", "--run-id", "first", "--case", "ok", "--transport", "stdio")
    latest = (scratch.root / "results" / "latest").read_text()
    env = {**os.environ, "MCPCM_KIND": "SDK"}
    done = subprocess.run(
        scratch.argv("run"),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_one_line_error(done, "MCPCM_KIND='SDK'", "sdk, framework")
    assert_one_line_error(scratch.harness("run", "--kind", "SDK", check=False), "--kind='SDK'")
    empty = ("--adapter", "raw-jsonrpc", "--family", "transport", "--transport", "http-json")
    assert_one_line_error(
        scratch.harness("run", "--run-id", "empty", *empty, check=False), "no cells", "--family transport"
    )
    assert_one_line_error(scratch.cli("list", *empty, check=False), "no cells")
    assert sorted(p.name for p in (scratch.root / "results").iterdir()) == ["first", "latest"]
    assert (scratch.root / "results" / "latest").read_text() == latest


def test_a_broken_adapter_directory_is_reported_and_the_rest_runs(checkout):
    scratch = checkout("raw-jsonrpc")
    (scratch.root / "clients" / "empty-dir").mkdir()
    only = scratch.cli("list", "--adapter", "raw-jsonrpc", "--case", "ok", "--protocol", "2025-11-25")
    assert only.stdout.splitlines()[-1] == "6 cells" and "empty-dir" not in only.stdout
    listing = scratch.cli("list", "--case", "ok")
    assert re.search(r"^empty-dir\s+BROKEN\s+.*empty-dir/adapter.toml: missing", listing.stdout, re.MULTILINE)

    done = scratch.harness("run", "--run-id", "r", "--case", "ok", "--transport", "stdio", *LEGACY, check=False)
    assert done.returncode == cli.EXIT_BROKEN_COLUMNS, done.stderr
    assert "empty-dir could not run" in done.stderr
    rows = scratch.rows("r")
    assert rows[("raw-jsonrpc", "ok", "advertised")]["outcome"] == "pass"
    broken = rows[("empty-dir", "ok", "advertised")]
    assert broken["outcome"] == "harness-error" and "adapter.toml: missing" in broken["error_message"]


def test_a_failed_environment_records_the_other_cells_and_exits_3(checkout):
    scratch = checkout("raw-jsonrpc", "unbuildable")
    done = scratch.harness(
        "run", "--run-id", "r", "--case", "ok", "--transport", "stdio", *LEGACY, check=False, timeout=300
    )
    assert done.returncode == cli.EXIT_BROKEN_COLUMNS, done.stderr
    assert "unbuildable could not run" in done.stderr and "pip" in done.stderr
    rows = scratch.rows("r")
    assert rows[("raw-jsonrpc", "ok", "hidden")]["outcome"] == "pass"
    assert rows[("unbuildable", "ok", "hidden")]["outcome"] == "harness-error"
    prepared = scratch.harness("prepare", "--adapter", "unbuildable", check=False, timeout=300)
    assert prepared.returncode == cli.EXIT_BROKEN_COLUMNS


def test_an_unwritable_report_path_is_one_line(checkout, tmp_path):
    scratch = checkout("raw-jsonrpc")
    scratch.harness("run", "--run-id", "r", "--case", "ok", "--transport", "stdio")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert_one_line_error(
        scratch.cli("report", "--out", str(blocker / "x"), check=False),
        f"cannot write the report to {blocker / 'x'}",
    )


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "latest", ".hidden", "x y"])
def test_run_ids_are_plain_names(checkout, run_id):
    scratch = checkout("raw-jsonrpc")
    done = scratch.harness("run", "--case", "ok", "--run-id", run_id, check=False, timeout=30)
    assert done.returncode == 2 and "run id" in done.stderr, done.stderr
    assert not (scratch.root / "results").exists() and not (scratch.root / "escape").exists()


def test_no_such_run_is_one_message_for_every_command(checkout):
    scratch = checkout("raw-jsonrpc")
    scratch.harness("run", "--run-id", "real", "--case", "ok", "--transport", "stdio")
    for command in (
        ("report", "--run", "nope"),
        ("probe", "--run", "nope"),
        ("diff", "real", "nope"),
        ("run", "--resume", "nope"),
    ):
        call = scratch.cli if command[0] in ("report", "diff") else scratch.harness  # run and probe start processes
        assert_one_line_error(call(*command, check=False), "no such run 'nope' in", "runs: real")


def test_unknown_names_suggest_and_print_nothing_else(checkout):
    scratch = checkout("raw-jsonrpc", "pydantic-ai")
    done = scratch.cli("list", "--case", "type-swp", check=False)
    assert_one_line_error(done, "unknown case 'type-swp'; did you mean 'type-swap'?", "catalog")
    assert done.stdout == "", "nothing is listed before the error"
    assert "ok, no-structured" not in done.stderr, "not every case id on one line"
    assert_one_line_error(scratch.cli("list", "--adapter", "raw-jsonrcp", check=False), "did you mean 'raw-jsonrpc'?")
    assert_one_line_error(
        scratch.cli("list", "--kind", "framework", "--adapter", "raw-jsonrpc", check=False),
        "'raw-jsonrpc' is of kind sdk, excluded by --kind framework",
    )


def _pty_run(scratch, columns: int) -> str:
    """Run a small matrix with a terminal of ``columns`` columns on stderr; return what it showed."""
    leader, follower = pty.openpty()
    ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    process = subprocess.Popen(
        scratch.argv(*["run", "--run-id", "tty", "--case", "ok", "--case", "type-swap", *LEGACY, "--jobs", "2"]),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "TERM": "xterm", "COLUMNS": str(columns)},
    )
    os.close(follower)
    shown = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the run is over
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    process.wait(timeout=30)
    os.close(leader)
    assert process.returncode == 0
    return shown.decode("utf-8", "replace")


def test_progress_fits_the_terminal_and_plain_lines_name_the_whole_cell(checkout):
    scratch = checkout("raw-jsonrpc")
    shown = ANSI.sub("", _pty_run(scratch, 80))
    bars = [line for line in re.split(r"[\r\n]", shown) if "/12" in line]
    assert bars and max(len(line) for line in bars) <= 80, max(bars, key=len)
    assert any("12/12" in line for line in bars)

    plain = scratch.harness("run", "--run-id", "plain", "--case", "ok", "--jobs", "2", "--fresh").stderr
    for transport in ("stdio", "http-json", "http-sse"):
        for protocol in catalog.PROTOCOLS:
            line = rf"^\[\s*\d+/12\] raw-jsonrpc ok advertised {transport} {protocol} -> pass"
            assert re.search(line, plain, re.MULTILINE), (transport, protocol)


def test_help_version_and_console_script():
    help_text = subprocess.run(
        [sys.executable, "-m", "harness", "--help"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    for command in cli.COMMANDS:
        assert re.search(rf"^\s+{command}\b", help_text, re.MULTILINE), command
    for code in ("0", "1", "2", "3", "130"):
        assert re.search(rf"\b{code} ", help_text), f"exit code {code} is documented in --help"
    run_help = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--help"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    for flag in ("--jobs", "--family", "--transport", "--kind"):
        block = run_help[run_help.index(f"  {flag}") :].split("\n  -")[0]
        assert len(block.split()) > 3, f"{flag} has a help text"
    script = Path(sys.prefix) / "bin" / "mcp-client-matrix"
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("mcp-client-matrix 0.1.0 (")


def test_readme_documents_every_exit_code():
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("## Exit codes") :]
    for name, code in vars(cli).items():
        if name.startswith("EXIT_"):
            assert re.search(rf"^\| `{code}` \|", table, re.MULTILINE), name


def test_list_counts_the_cells_of_a_selection(checkout):
    """raw-jsonrpc declares both revisions, schema-only (a stdio fixture) only 2025-11-25: under
    2026-07-28 it runs the era case ``ok`` alone."""
    scratch = checkout("raw-jsonrpc", "schema-only")
    listing = scratch.cli("list", "--case", "ok")
    assert listing.stdout.splitlines()[-1] == "16 cells"
    assert re.search(r"^raw-jsonrpc\s+python\s+-\s+raw-jsonrpc$", listing.stdout, re.MULTILINE)
    for protocol in catalog.PROTOCOLS:
        one = scratch.cli("list", "--case", "ok", "--protocol", protocol).stdout
        assert one.splitlines()[-1] == "8 cells", protocol
    schema_cases = [case for case in catalog.CASES if case.family == "schema"]
    meta = scratch.cli("list", "--adapter", "schema-only", "--family", "schema").stdout
    assert meta.splitlines()[-1] == f"{len(schema_cases) * 2 + 2} cells"
    modern = scratch.cli("list", "--adapter", "schema-only", "--protocol", "2026-07-28").stdout
    assert modern.splitlines()[-1] == "2 cells"
