"""Reading and validating an adapter's observation (``docs/adapters.md``, contract 1).

:func:`read` returns the observation with long strings and arrays elided, or raises
:class:`ObservationError` naming the file and the field that is wrong.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from harness.records import CONTRACT, Observation
from servers.reference.elide import elide

STEP_STATUSES = ("ok", "raised")
CALL_STATUSES = ("returned", "raised")


class ObservationError(ValueError):
    """An observation is not valid JSON or does not follow the contract."""


def _check(condition: bool, path: Path, field: str, problem: str) -> None:
    if not condition:
        raise ObservationError(f"{path}: {field}: {problem}")


def _error(path: Path, field: str, value: Any) -> None:
    if value is None:
        return
    _check(isinstance(value, dict), path, field, "expected an Error object or null")
    _check(isinstance(value.get("type"), str), path, f"{field}.type", "expected a string")
    _check(isinstance(value.get("message"), str), path, f"{field}.message", "expected a string")
    code = value.get("code")
    _check(
        code is None or (isinstance(code, int) and not isinstance(code, bool)),
        path,
        f"{field}.code",
        f"expected an integer or null, got {code!r}",
    )
    for optional in ("sdk_code", "source"):
        _check(not isinstance(value.get(optional), (dict, list)), path, f"{field}.{optional}", "expected a string")
    chain = value.get("chain", [])
    _check(isinstance(chain, list), path, f"{field}.chain", "expected a list")
    for index, item in enumerate(chain):
        _error(path, f"{field}.chain[{index}]", item)


def _duration(path: Path, field: str, value: Any) -> None:
    _check(
        isinstance(value, (int, float)) and not isinstance(value, bool),
        path,
        field,
        f"expected a number, got {value!r}",
    )


def _step(path: Path, field: str, value: Any, *, nullable: bool) -> None:
    if value is None:
        _check(nullable, path, field, "must not be null")
        return
    _check(isinstance(value, dict), path, field, "expected an object")
    _check(
        value.get("status") in STEP_STATUSES,
        path,
        f"{field}.status",
        f"expected one of {STEP_STATUSES}, got {value.get('status')!r}",
    )
    _error(path, f"{field}.error", value.get("error"))
    _check(
        value["status"] == "ok" or value.get("error") is not None,
        path,
        f"{field}.error",
        "a raised step needs an error",
    )
    _duration(path, f"{field}.duration_ms", value.get("duration_ms"))


def _model_view(path: Path, field: str, value: Any, *, required: bool) -> None:
    if value is None:
        _check(not required, path, field, "a framework adapter's returned call needs a model_view")
        return
    _check(isinstance(value, dict), path, field, "expected an object")
    _check("value" in value, path, f"{field}.value", "missing (what the model received)")
    flag = value.get("error_flag")
    _check(
        flag is None or isinstance(flag, bool), path, f"{field}.error_flag", f"expected a boolean or null, got {flag!r}"
    )
    where = value.get("error_flag_field")
    _check(where is None or isinstance(where, str), path, f"{field}.error_flag_field", "expected a string or null")
    shown = value.get("output_schema_shown")
    _check(shown is None or isinstance(shown, bool), path, f"{field}.output_schema_shown", "expected a boolean or null")
    _reach(path, f"{field}.reach", value.get("reach"))


def _reach(path: Path, field: str, value: Any) -> None:
    if value is None:
        return
    _check(isinstance(value, dict), path, field, "expected an object or null")
    _check(isinstance(value.get("words"), str), path, f"{field}.words", "expected a string")
    payloads = value.get("payloads")
    _check(isinstance(payloads, list), path, f"{field}.payloads", "expected an array")
    for number, payload in enumerate(payloads):
        where = f"{field}.payloads[{number}]"
        _check(isinstance(payload, dict), path, where, "expected an object")
        for key in ("block", "chars", "head", "tail", "kept"):
            count = payload.get(key)
            _check(
                isinstance(count, int) and not isinstance(count, bool) and count >= 0,
                path,
                f"{where}.{key}",
                f"expected a count, got {count!r}",
            )


def _call(path: Path, field: str, value: Any, *, framework: bool = False) -> None:
    _check(isinstance(value, dict), path, field, "expected an object")
    status = value.get("status")
    _check(status in CALL_STATUSES, path, f"{field}.status", f"expected one of {CALL_STATUSES}, got {status!r}")
    if status == "returned":
        _check("result" in value, path, f"{field}.result", "missing for a returned call")
    else:
        _check(value.get("error") is not None, path, f"{field}.error", "a raised call needs an error")
    _error(path, f"{field}.error", value.get("error"))
    _duration(path, f"{field}.duration_ms", value.get("duration_ms"))
    if framework or "model_view" in value:
        _model_view(path, f"{field}.model_view", value.get("model_view"), required=framework and status == "returned")


def validate(data: Any, path: Path, *, framework: bool = False) -> None:
    """Raise :class:`ObservationError` unless ``data`` follows the observation contract.

    ``framework``: the adapter is a framework adapter, whose returned calls carry a ``model_view``.
    """
    _check(isinstance(data, dict), path, "(root)", "expected a JSON object")
    _check(data.get("contract") == CONTRACT, path, "contract", f"expected {CONTRACT}, got {data.get('contract')!r}")
    for key in ("package_version", "runtime_version"):
        _check(data.get(key) is None or isinstance(data.get(key), str), path, key, "expected a string or null")
    _step(path, "initialize", data.get("initialize"), nullable=False)
    _step(path, "list_tools", data.get("list_tools"), nullable=True)
    _step(path, "close", data.get("close"), nullable=True)
    calls = data.get("calls")
    _check(isinstance(calls, list), path, "calls", "expected a list")
    for index, call in enumerate(calls):
        _call(path, f"calls[{index}]", call, framework=framework)
    if data.get("followup") is not None:
        _call(path, "followup", data["followup"], framework=framework)
    errors = data.get("transport_errors")
    _check(isinstance(errors, list), path, "transport_errors", "expected a list")
    for index, error in enumerate(errors):
        _error(path, f"transport_errors[{index}]", error)


LARGE_BYTES = 1 << 20
"""An observation file at least this large is read by :data:`_large`."""
_large = ThreadPoolExecutor(max_workers=1, thread_name_prefix="large-observations")
"""Reads every large observation, one at a time and always on the same thread. One at a time: a
12 to 32 MiB result is read, decoded, parsed and elided by one cell at a time (twice its size while
it is parsed), so that cells finishing together do not add up in the harness's memory. The same
thread: glibc's malloc gives each thread an arena of its own and keeps much of what is freed there,
so large reads taking turns on the cells' threads (up to 15) held the memory of several at once:
the harness's peak resident set over the default matrix reached 321 MiB. 45 reads of 10 and 12 MiB
observations by 15 threads: a peak of 161 MiB taking turns on those threads, 53 MiB here."""


def read(path: Path, label: Path | None = None, *, framework: bool = False) -> Observation:
    """Parse, validate and elide the observation at ``path`` (errors name ``label`` or ``path``)."""
    shown = label or path
    try:
        large = path.stat().st_size >= LARGE_BYTES
    except OSError as exc:
        raise ObservationError(f"{shown}: cannot read: {exc.strerror}") from exc
    if large:
        return _large.submit(_read, path, shown, framework).result()
    return _read(path, shown, framework)


def _read(path: Path, shown: Path, framework: bool) -> Observation:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ObservationError(f"{shown}: cannot read: {exc.strerror}") from exc
    excerpt = raw[:80].decode("utf-8", "replace")
    try:
        text = raw.decode(json.detect_encoding(raw), "surrogatepass")  # as json.loads(raw) would
        del raw  # at most two copies at once: the bytes and the text, then the text and the value
        data = json.loads(text)
    except ValueError as exc:
        raise ObservationError(f"{shown}: not valid JSON ({exc}); starts with {excerpt!r}") from exc
    del text  # the parsed value is the only copy from here on
    validate(data, shown, framework=framework)
    return cast(Observation, elide(data))
