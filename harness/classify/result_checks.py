"""Checks of a recorded result that need no client: what the specification says about it, read
off the case file alone, and its frame size against every column's measured stdio limit.

- ``schema``: structuredContent against the tool's own outputSchema, with the ``jsonschema``
  library (JSON Schema 2020-12 unless the schema names another dialect in ``$schema``; a ``$ref``
  is never fetched from the network, so an unresolvable one is reported as such);
- ``structured-without-schema`` and ``schema-without-structured``: one of the two without the other;
- ``text-carries-structured``: whether a text block carries the structured data (its JSON is
  equal to structuredContent), as the specification's backwards-compatibility SHOULD asks;
- ``iserror-with-structured``: an error result that carries structured content;
- ``content``: the required ``content`` array;
- ``frame-size``: the recorded frame against the largest frame each probed column accepted on stdio
  (the latest run with a probe, ``boundary.json``).

A check is ``ok``, ``note`` (worth knowing, not a fault) or ``fault`` (a MUST or SHOULD of the
specification the result breaks, or a limit of a column it exceeds). Nothing here predicts what a
client does; the matrix's cells show that.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import jsonschema
import referencing.exceptions
from jsonschema.exceptions import SchemaError

from harness.matrix import catalog
from harness.recorded.case_files import CaseFile

Status = Literal["ok", "note", "fault"]
MAX_SCHEMA_ERRORS = 5


@dataclass(frozen=True)
class Check:
    """One check of a recorded result: its name, how it came out and the one line that says why."""

    name: str
    status: Status
    message: str
    clause: str = ""


def _path(parts: Iterable[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def schema_check(schema: Any, data: Any) -> Check:
    """structuredContent against the outputSchema (2020-12 unless ``$schema`` says otherwise)."""
    if isinstance(schema, bool):  # a boolean schema (2026-07-28 allows any JSON Schema)
        if schema:
            return Check("schema", "ok", "the outputSchema true accepts any structuredContent", catalog.CONFORM)
        return Check("schema", "fault", "the outputSchema false accepts no structuredContent", catalog.CONFORM)
    if not isinstance(schema, dict):
        return Check("schema", "fault", f"the outputSchema is not a JSON Schema: a {type(schema).__name__}")
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator_class.check_schema(schema)
    except SchemaError as exc:
        return Check(
            "schema", "fault", f"the outputSchema is not a valid {validator_class.__name__} schema: {exc.message}"
        )
    validator = validator_class(schema)
    dialect = validator_class.__name__.removesuffix("Validator")
    try:
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    except referencing.exceptions.Unresolvable as exc:
        return Check(
            "schema",
            "fault",
            f"the outputSchema has a $ref that cannot be resolved offline: {exc}",
            catalog.REF_NETWORK,
        )
    if not errors:
        return Check("schema", "ok", f"structuredContent conforms to the outputSchema ({dialect})", catalog.CONFORM)
    shown = "; ".join(f"{_path(e.absolute_path)}: {e.message}" for e in errors[:MAX_SCHEMA_ERRORS])
    more = f" (and {len(errors) - MAX_SCHEMA_ERRORS} more)" if len(errors) > MAX_SCHEMA_ERRORS else ""
    return Check("schema", "fault", f"structuredContent does not conform ({dialect}): {shown}{more}", catalog.CONFORM)


def _texts(result: dict[str, Any]) -> list[str]:
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    return [
        b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _carries(text: str, data: Any) -> bool:
    try:
        return bool(json.loads(text) == data)
    except ValueError:
        return False


def _structure_checks(tool: dict[str, Any], result: dict[str, Any]) -> list[Check]:
    has_schema = "outputSchema" in tool
    has_structured = "structuredContent" in result
    is_error = result.get("isError") is True
    checks: list[Check] = []
    if not isinstance(result.get("content"), list):
        checks.append(Check("content", "fault", "the result has no content array", catalog.CONTENT_REQUIRED))
    if has_schema and has_structured:
        checks.append(schema_check(tool["outputSchema"], result["structuredContent"]))
    elif has_schema and not is_error:
        checks.append(
            Check(
                "schema-without-structured",
                "fault",
                "the tool has an outputSchema, the result no structuredContent",
                catalog.CONFORM,
            )
        )
    elif has_schema:
        checks.append(
            Check(
                "schema-without-structured",
                "note",
                "an error result without structuredContent, from a tool with an outputSchema",
            )
        )
    elif has_structured:
        checks.append(
            Check(
                "structured-without-schema",
                "note",
                "structuredContent without an outputSchema: no client can validate it",
            )
        )
    if has_structured:
        texts = _texts(result)
        if any(_carries(text, result["structuredContent"]) for text in texts):
            checks.append(
                Check(
                    "text-carries-structured",
                    "ok",
                    "a text block carries the structured data as JSON",
                    catalog.BACKCOMPAT,
                )
            )
        else:
            said = f"the text says {texts[0][:80]!r}" if texts else "there is no text block"
            checks.append(
                Check(
                    "text-carries-structured",
                    "fault",
                    f"no text block carries the structured data ({said}): a client that reads only text misses it",
                    catalog.BACKCOMPAT,
                )
            )
    if is_error and has_structured:
        checks.append(
            Check(
                "iserror-with-structured",
                "note",
                "isError: true with structuredContent: clients differ on validating it",
                catalog.IS_ERROR,
            )
        )
    return checks


def payload_kind(result: dict[str, Any]) -> str:
    """The probe's payload kind closest to the result: base64 data (``blob``), non-ASCII text
    (``cjk``), else ``text``."""
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    if any(isinstance(b, dict) and isinstance(b.get("data"), str) for b in blocks):
        return "blob"
    return "text" if json.dumps(result, ensure_ascii=False).isascii() else "cjk"


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB" if n >= 1024 * 1024 else f"{n:,} bytes"


def frame_checks(frame_bytes: int | None, kind: str, boundaries: list[dict[str, Any]]) -> list[Check]:
    """The frame against every probed column's largest accepted stdio frame of ``kind``."""
    if not isinstance(frame_bytes, int):
        return [Check("frame-size", "note", "the case file does not say how large the frame was")]
    if not boundaries:
        return [Check("frame-size", "note", f"{_mib(frame_bytes)}; no probe run to compare it with (`nox -s probe`)")]
    checks = []
    for found in sorted((b for b in boundaries if b.get("kind") == kind), key=lambda b: str(b["column"])):
        limit = found.get("largest_accepted")
        if found.get("no_limit_up_to") is not None or not isinstance(limit, int):
            continue
        if frame_bytes > limit:
            line = (
                f"{_mib(frame_bytes)}: {_mib(frame_bytes - limit)} above {found['column']}'s {limit:,}-byte stdio limit"
            )
            checks.append(Check("frame-size", "fault", line, catalog.NO_LIMIT))
        else:
            line = (
                f"{_mib(frame_bytes)}: {_mib(limit - frame_bytes)} below {found['column']}'s {limit:,}-byte stdio limit"
            )
            checks.append(Check("frame-size", "ok", line, catalog.NO_LIMIT))
    if not checks:
        checks.append(
            Check("frame-size", "ok", f"{_mib(frame_bytes)}: no probed column has a stdio limit for {kind} frames")
        )
    return checks


def check(case_file: CaseFile, boundaries: list[dict[str, Any]]) -> list[Check]:
    """Every check of one recorded result, the specification's first, then the frame size."""
    result: dict[str, Any] = case_file.data["result"]
    return _structure_checks(case_file.tool, result) + frame_checks(
        case_file.data.get("frame_bytes"), payload_kind(result), boundaries
    )
