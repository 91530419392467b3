"""One contract, two runtimes: the adapters' support libraries (``clients/_support/observe.py`` and
friends, ``clients/_support/*.mjs``) held to the same fixtures (``tests/fixtures/contract/*.json``).

Each fixture case runs on the Python helper in-process and on the Node helper through
``tests/support_contract_runner.mjs`` (``node`` on PATH, no npm packages), and both must give the
fixture's expected result. The framework driver's case needs ``anyio``: it runs in a subprocess on
the first Python that has it (this one, or an adapter environment in ``.envs``), and is skipped
when there is none. docs/adapters.md, "Support libraries: one contract, two runtimes".
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from .conftest import REPO, Checkout

SUPPORT = REPO / "clients" / "_support"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "contract"
RUNNER = Path(__file__).resolve().parent / "support_contract_runner.mjs"
NODE = shutil.which("node")

sys.path.insert(0, str(SUPPORT))
import observe  # noqa: E402

HELPER_FIXTURES = (
    "read_cell.json",
    "check_options.json",
    "check_cancel_after.json",
    "normalize_ids.json",
    "error_record.json",
    "deadline_error.json",
    "write_observation.json",
)
PYTHON_TYPES = {"boolean": bool, "integer": int, "number": float, "string": str}


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def build_error(spec: dict[str, Any], root: BaseException | None = None) -> BaseException:
    """An exception built from an error spec (error_record.json), in Python's idiom."""
    exc = type(spec["type"], (Exception,), {})(spec["message"])
    top = root or exc
    if "members" in spec:
        exc.exceptions = tuple(build_error(member, top) for member in spec["members"])  # type: ignore[attr-defined]
    if "code" in spec:
        exc.error = SimpleNamespace(code=spec["code"], data=spec.get("data"))  # type: ignore[attr-defined]
    if "sdk_code" in spec:
        exc.code = spec["sdk_code"]  # type: ignore[attr-defined]
    if spec.get("cause") == "$root":
        exc.__cause__ = top
    elif "cause" in spec:
        exc.__cause__ = build_error(spec["cause"], top)
    return exc


def stopped(fn: Any, *args: Any) -> dict[str, Any]:
    """``{"ok": True, ...}`` from what ``fn(*args)`` returned, or ``{"error": message}`` when it stopped
    the adapter (:func:`observe.fail`: exit status 2, ``adapter: <message>`` on stderr)."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            value = fn(*args)
    except SystemExit as exc:
        assert exc.code == 2, f"the adapter stopped with status {exc.code}, not 2"
        return {"error": stderr.getvalue().strip().removeprefix("adapter: ")}
    return {"ok": True, **(value or {})}


def py_read_cell(case: dict[str, Any], tmp: Path) -> dict[str, Any]:
    path = tmp / "cell.json"
    path.write_text(case["raw"] if "raw" in case else json.dumps(case["content"]), encoding="utf-8")
    result = stopped(lambda: {"cell": observe.read_cell(str(path))})
    if "error" in result:
        result["error"] = result["error"].replace(str(path), "{path}")
    return result


def py_write_observation(case: dict[str, Any], tmp: Path) -> dict[str, Any]:
    observe.write_observation(str(tmp / "observation.json"), case["value"])
    return {
        "raw": (tmp / "observation.json").read_text(encoding="utf-8"),
        "leftovers": sorted(p.name for p in tmp.iterdir() if p.name != "observation.json"),
    }


PYTHON_HELPERS = {
    "read_cell.json": py_read_cell,
    "check_options.json": lambda case, _: stopped(
        observe.check_options, case["options"], {k: PYTHON_TYPES[v] for k, v in case["known"].items()}
    ),
    "check_cancel_after.json": lambda case, _: stopped(observe.check_cancel_after, case["calls"]),
    "normalize_ids.json": lambda case, _: observe.normalize_ids(case["input"]),
    "error_record.json": lambda case, _: observe.error_record(build_error(case["error"])),
    "deadline_error.json": lambda case, _: observe.deadline_error(case["what"], case["elapsed_ms"], case["reason"]),
    "write_observation.json": py_write_observation,
}


def run_node(*args: str) -> subprocess.CompletedProcess[str]:
    if NODE is None:
        pytest.skip("node is not on PATH")
    done = subprocess.run([NODE, str(RUNNER), *args], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, f"node runner {args[0]} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done


@functools.cache
def node_results() -> dict[str, list[Any]]:
    """Every helper fixture's results from one run of the Node runner: {fixture name: [result per case]}."""
    return json.loads(run_node("helpers", *(str(FIXTURES / name) for name in HELPER_FIXTURES)).stdout)


def assert_expected(name: str, case: dict[str, Any], got: Any) -> None:
    """``got`` (either runtime's result for ``case`` of fixture ``name``) is what the fixture expects."""
    if name == "read_cell.json":
        expect = case["expect"]
        if "error_prefix" in expect:
            assert set(got) == {"error"} and got["error"].startswith(expect["error_prefix"]), got
        elif "error" in expect:
            assert got == expect
        else:
            assert got == {"ok": True, "cell": case["content"]}
    elif name == "write_observation.json":
        assert json.loads(got["raw"]) == case["value"]
        for text in case["expect_raw_contains"]:
            assert text in got["raw"], f"{text!r} not in {got['raw']!r}"
        assert got["leftovers"] == []
    else:
        assert got == case["expect"]


HELPER_CASES = [(name, index) for name in HELPER_FIXTURES for index in range(len(load(name)["cases"]))]


def case_id(param: tuple[str, int]) -> str:
    name, index = param
    return f"{name.removesuffix('.json')}-{load(name)['cases'][index]['name'].replace(' ', '_')}"


@pytest.mark.parametrize("runtime", ["python", "node"])
@pytest.mark.parametrize("param", HELPER_CASES, ids=[case_id(p) for p in HELPER_CASES])
def test_helper(param: tuple[str, int], runtime: str, tmp_path: Path) -> None:
    name, index = param
    case = load(name)["cases"][index]
    got = PYTHON_HELPERS[name](case, tmp_path) if runtime == "python" else node_results()[name][index]
    assert_expected(name, case, got)


def comparable(observation: dict[str, Any], summary: int | None = None) -> dict[str, Any]:
    """``observation`` without what differs run to run: durations (0), the ms in messages, the runtime."""

    def walk(node: Any, key: str | None = None) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(item) for item in node]
        if key == "duration_ms":
            return 0
        if key == "message" and isinstance(node, str):
            return re.sub(r"after \d+(\.\d+)? ms", "after N ms", node)
        return node

    data = walk({k: v for k, v in observation.items() if k != "runtime_version"})
    if summary:
        errors = data["transport_errors"]
        data["transport_errors"] = {"count": len(errors), "head": errors[:summary], "tail": errors[-summary:]}
    return data


def py_observation(cell: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    """Play ``case["ops"]`` on an :class:`observe.Observation` as the drivers do, then snapshot it."""
    obs = observe.Observation(cell, "")
    watches: dict[str, observe.Stopwatch] = {}
    for op in case["ops"]:
        if op["op"] == "begin":
            watches[op["step"]] = obs.begin(op["step"], op.get("tool"))
        elif op["op"] == "end":
            watch = watches.pop(op["step"])
            error = observe.error_record(build_error(op["error"])) if "error" in op else None
            if "tool" in op:
                entry = obs.call_entry(op["tool"], watch.ms(), op.get("result"), error)
            else:
                extra = {key: op.get(key) for key in ("protocol_version", "tools") if key in op}
                extra.update({"protocol_version": None} if op["step"] == "initialize" and error else {})
                entry = observe.step(watch, error, **extra)
            obs.end(op["step"], entry)
        elif "distinct" in op:
            for i in range(op["distinct"]):
                obs.transport_error(build_error({**op["error"], "message": f"{op['error']['message']} {i}"}))
        else:
            exc = build_error(op["error"])
            for _ in range(op["times"]):
                obs.transport_error(exc)
    return obs.snapshot(reason=case["reason"])


OBSERVATION = load("observation.json")


@pytest.mark.parametrize("runtime", ["python", "node"])
@pytest.mark.parametrize(
    "index", range(len(OBSERVATION["cases"])), ids=[c["name"].replace(" ", "_") for c in OBSERVATION["cases"]]
)
def test_observation(index: int, runtime: str, tmp_path: Path) -> None:
    case = OBSERVATION["cases"][index]
    if runtime == "python":
        got = py_observation(OBSERVATION["cell"], case)
    else:
        out = tmp_path / "observation.json"
        run_node("observation", str(FIXTURES / "observation.json"), str(index), str(out))
        got = json.loads(out.read_text(encoding="utf-8"))
    assert comparable(got, case.get("summary")) == case["expect"]


FAKE_FRAMEWORK = """
import json, sys, time
started = time.monotonic()
import framework_driver

fixture, cell_path, out = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
spec = fixture["list_error"]


class Fake:
    async def open(self, stack):
        return "2025-11-25"

    async def tools(self):
        exc = type(spec["type"], (Exception,), {})(spec["message"])
        exc.error = type("ErrorData", (), {"code": spec["code"], "data": None})()
        raise exc

    async def run(self, call):
        return {"result": {"tool": call["name"], "arguments": call["arguments"]},
                "model_view": framework_driver.model_view(call["name"] + " ran", None, None, None)}


sys.exit(framework_driver.main(["fake", cell_path, out], started, "", 0.5, {}, lambda cell, obs: Fake()))
"""


@functools.cache
def python_with_anyio() -> str:
    """This interpreter if it has ``anyio`` (framework_driver.py's dependency), else the ``python-mcp``
    adapter's environment (the SDK depends on it), prepared here when no earlier test built it."""
    if importlib.util.find_spec("anyio") is not None:
        return sys.executable
    with tempfile.TemporaryDirectory(prefix="mcpcm-anyio-") as scratch:  # the environment is the repository's
        Checkout(Path(scratch) / "checkout", ["python-mcp"]).harness("prepare", "--adapter", "python-mcp")
    python = str(REPO / ".envs" / "python-mcp" / "bin" / "python")
    probe = subprocess.run([python, "-c", "import anyio"], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, f"{python} has no anyio: {probe.stderr[-2000:]}"
    return python


@pytest.mark.parametrize("runtime", ["python", "node"])
def test_framework_driver_after_a_failed_listing(runtime: str, tmp_path: Path) -> None:
    fixture = load("framework_listing_failed.json")
    out = tmp_path / "observation.json"
    if runtime == "python":
        python = python_with_anyio()
        cell = tmp_path / "cell.json"
        cell.write_text(json.dumps(fixture["cell"]), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(SUPPORT)}
        done = subprocess.run(
            [python, "-c", FAKE_FRAMEWORK, str(FIXTURES / "framework_listing_failed.json"), str(cell), str(out)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    else:
        run_node("framework", str(FIXTURES / "framework_listing_failed.json"), str(out))
    assert comparable(json.loads(out.read_text(encoding="utf-8"))) == fixture["expect"]
