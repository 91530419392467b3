"""Warm workers (harness/system/workers.py, clients/_support/fork_worker.py): a forked child per cell is
isolated as a process of its own would be, bounded by its budget, and leaves nothing behind."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness.system import workers

from .conftest import REPO

FORK_WORKER = REPO / "clients" / "_support" / "fork_worker.py"


def _adapter(directory: Path, body: str, helper: str = "COUNT = 0\n") -> Path:
    """An entry file that imports a helper module (its state shows what a child inherits)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "helper_state.py").write_text(helper)
    entry = directory / "adapter.py"
    entry.write_text("import json\nimport os\nimport sys\n\nimport helper_state\n\n" + textwrap.dedent(body))
    return entry


def _worker(entry: Path, tmp_path: Path) -> workers.Worker:
    env = dict(os.environ, PYTHONPATH=str(entry.parent))
    return workers.Worker(
        [sys.executable, str(FORK_WORKER), str(entry)], cwd=entry.parent, env=env, log=tmp_path / "worker.log"
    )


def _run(worker: workers.Worker, tmp_path: Path, name: str, *args: str, timeout_s: float = 20) -> workers.Finished:
    cell = tmp_path / name
    cell.mkdir()
    return worker.run(
        ["adapter.py", str(cell), *args],  # argv[0]: the worker runs its own entry, named by its path
        cwd=cell,
        stdout=cell / "stdout.txt",
        stderr=cell / "stderr.txt",
        timeout_s=timeout_s,
        marker=str(cell),
    )


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_forked_child_is_a_process_of_its_own(tmp_path):
    entry = _adapter(
        tmp_path / "adapter",
        """
        helper_state.COUNT += 1  # each child starts from the worker's state, not the previous child's
        print("to stdout")
        print("to stderr", file=sys.stderr)
        facts = {
            "pid": os.getpid(),
            "pgid": os.getpgid(0),
            "sid": os.getsid(0),
            "ppid": os.getppid(),
            "argv": sys.argv,
            "cwd": os.getcwd(),
            "path0": sys.path[0],
            "name": __name__,
            "count": helper_state.COUNT,
            "stdin": sys.stdin.read(),
        }
        with open(os.path.join(sys.argv[1], "facts.json"), "w") as out:
            json.dump(facts, out)
        sys.exit(int(sys.argv[2]))
        """,
    )
    worker = _worker(entry, tmp_path)
    try:
        first = _run(worker, tmp_path, "one", "0")
        second = _run(worker, tmp_path, "two", "3")
    finally:
        worker.close()
    assert (first.exit_code, first.timed_out) == (0, False)
    assert (second.exit_code, second.timed_out) == (3, False)
    facts = [json.loads((tmp_path / name / "facts.json").read_text()) for name in ("one", "two")]
    for name, fact in zip(("one", "two"), facts, strict=True):
        assert fact["pgid"] == fact["pid"] == fact["sid"], "a session and process group of its own"
        assert fact["argv"] == [str(entry), str(tmp_path / name), "0" if name == "one" else "3"], "as for python ENTRY"
        assert fact["cwd"] == str(tmp_path / name)
        assert fact["path0"] == str(entry.parent), "sys.path[0] is the script's directory, as for `python adapter.py`"
        assert fact["name"] == "__main__"
        assert fact["count"] == 1
        assert fact["stdin"] == "", "stdin is /dev/null"
        assert (tmp_path / name / "stdout.txt").read_text() == "to stdout\n"
        assert (tmp_path / name / "stderr.txt").read_text() == "to stderr\n"
    assert facts[0]["pid"] != facts[1]["pid"]
    assert facts[0]["ppid"] == facts[1]["ppid"] != os.getpid(), "both forked by the one worker"


def test_exit_statuses_are_those_of_a_script(tmp_path):
    entry = _adapter(
        tmp_path / "adapter",
        """
        import signal
        how = sys.argv[2]
        if how == "raise":
            raise RuntimeError("adapter bug")
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "message":
            sys.exit("fatal: a message")
        """,
    )
    worker = _worker(entry, tmp_path)
    try:
        raised = _run(worker, tmp_path, "raise", "raise")
        killed = _run(worker, tmp_path, "kill", "kill")
        message = _run(worker, tmp_path, "message", "message")
        fell_through = _run(worker, tmp_path, "none", "none")
    finally:
        worker.close()
    assert raised.exit_code == 1
    assert "RuntimeError: adapter bug" in (tmp_path / "raise" / "stderr.txt").read_text()
    assert killed.exit_code == -9
    assert message.exit_code == 1
    assert (tmp_path / "message" / "stderr.txt").read_text() == "fatal: a message\n"
    assert fell_through.exit_code == 0


def test_the_budget_kills_the_child_and_its_group(tmp_path):
    entry = _adapter(
        tmp_path / "adapter",
        """
        import subprocess
        import time
        sleeper = subprocess.Popen(["sleep", "300"])  # in the child's group
        with open(os.path.join(sys.argv[1], "pids.json"), "w") as out:
            json.dump([os.getpid(), sleeper.pid], out)
        time.sleep(300)
        """,
    )
    worker = _worker(entry, tmp_path)
    try:
        started = time.monotonic()
        finished = _run(worker, tmp_path, "hang", timeout_s=1.5)
        elapsed = time.monotonic() - started
        after = _run(worker, tmp_path, "after", timeout_s=1.5)  # the worker still serves
    finally:
        worker.close()
    assert finished.timed_out and finished.exit_code is None
    assert elapsed < 60, "killed at its 1.5 s budget, not after its child's 300 s"
    assert after.timed_out, "the same adapter hangs again"
    for name in ("hang", "after"):
        for pid in json.loads((tmp_path / name / "pids.json").read_text()):
            assert not _alive(pid), f"pid {pid} of {name} outlived its budget"


def test_an_adapter_with_a_thread_after_import_is_refused(tmp_path):
    entry = _adapter(
        tmp_path / "adapter",
        "sys.exit(0)\n",
        helper="import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), name='poller', daemon=True).start()\n",
    )
    with pytest.raises(workers.WorkerError, match="not safe to fork: poller"):
        _worker(entry, tmp_path)
    pool = workers.WorkerPool()
    env = dict(os.environ, PYTHONPATH=str(entry.parent))
    command = [sys.executable, str(FORK_WORKER), str(entry)]
    assert pool.get("threaded", command, cwd=entry.parent, env=env, log=tmp_path / "pool.log") is None
    assert "poller" in pool.refused["threaded"]
    pool.close()


def test_an_adapter_that_does_not_import_is_refused(tmp_path):
    entry = _adapter(tmp_path / "adapter", "sys.exit(0)\n", helper="import no_such_module_anywhere\n")
    with pytest.raises(workers.WorkerError, match="ModuleNotFoundError"):
        _worker(entry, tmp_path)


def test_closing_the_worker_ends_its_running_children(tmp_path):
    entry = _adapter(
        tmp_path / "adapter",
        """
        import time
        with open(os.path.join(sys.argv[1], "pid"), "w") as out:
            out.write(str(os.getpid()))
        time.sleep(300)
        """,
    )
    worker = _worker(entry, tmp_path)
    cell = tmp_path / "cell"
    cell.mkdir()
    raised: list[BaseException] = []

    def run() -> None:
        try:
            worker.run(["adapter.py", str(cell)], cwd=cell, stdout=cell / "out", stderr=cell / "err", timeout_s=60,
                       marker=str(cell))  # fmt: skip
        except workers.WorkerError as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not (cell / "pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int((cell / "pid").read_text())
    worker.close()
    thread.join(10)
    assert not thread.is_alive(), "a run waiting on a closed worker returns"
    assert raised and "the worker exited" in str(raised[0])
    assert not _alive(child)
