"""From cell records to one classified row per cell (pandas).

Two steps, both harness-side (adapters only report facts):

1. :func:`facts` flattens a record into plain columns: how the process ended, what the case's
   calls and the follow-up did, what the server sent (from its journal), what differs.
2. :func:`classify` derives the outcome from those columns with one ordered rule list
   (:data:`RULES`); the first rule that holds wins. The outcome words are defined in
   ``docs/architecture.md`` and in the report's legend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypedDict, cast

import numpy as np
import pandas as pd

from harness.matrix.catalog import LEGACY_PROTOCOL
from harness.matrix.cells import FOLLOWUP_CALL, FOLLOWUP_TEXT
from harness.matrix.manifest import MODEL_VIEW_KINDS
from harness.records import Call, CellRecord, ErrorInfo, JournalEvent, Observation, RunMeta
from servers.reference.elide import as_text

from . import compare, model_input

OUTCOMES = ("pass", "error-result", "reject", "disconnect", "timeout", "crash", "harness-error")
SHORT_MESSAGE = 160
TIMEOUT_CODES = {-32001, 408}
TIMEOUT_SDK_CODES = {"REQUEST_TIMEOUT"}
UNHANDLED_SOURCES = {"uncaughtException", "unhandledRejection"}
TIMEOUT_TEXT = re.compile(r"timed? ?out|timeout|deadline exceeded|deadline has elapsed", re.IGNORECASE)
"""A client's own timeout in its error's type or message. Where a client bounds a request the way its
language does rather than by an option of its own, that is its timeout: Go's context (``context
deadline exceeded``), Rust's ``tokio::time::timeout`` (``Elapsed``: ``deadline has elapsed``)."""
WORDS_EXCERPT = 400
"""How much of a host's own words (:class:`records.Reach`) the classified row keeps."""
ADAPTER_DEADLINE = "AdapterTimeout"
"""Error type adapters record when their own deadline (inside the cell budget) ended a step."""

COLUMNS = (
    "client",
    "adapter",
    "kind",
    "variant",
    "case",
    "family",
    "schema",
    "transport",
    "protocol",
    "wire_protocol",
    "outcome",
    "timeout_by",
    "followup",
    "altered",
    "altered_fields",
    "stage",
    "error_type",
    "error_code",
    "error_sdk_code",
    "error_message",
    "transport_errors",
    "transport_error_count",
    "package",
    "package_version",
    "duration_ms",
    "wall_ms",
    "frame_bytes",
    "tools_list_called",
    "server_exit",
    "server_cancel",
    "cancelled_by_caller",
    "exit_code",
    "model_channel",
    "model_error_seen",
    "model_error_flag",
    "model_excerpt",
    "model_kept",
    "model_words",
    "model_schema_shown",
    "model_blocks",
    "model_aborted",
    "ran_at",
    "reused_from",
    "key",
)


def error_text(error: ErrorInfo | None) -> str:
    if not error:
        return ""
    code = f" {error['code']}" if error.get("code") is not None else ""
    return f"{as_text(error.get('type'))}{code}: {as_text(error.get('message'))}"


def is_client_timeout(error: ErrorInfo | None) -> bool:
    """Whether an error raised by a client is its own request timeout."""
    if not error or error.get("type") == ADAPTER_DEADLINE:
        return False
    text = as_text(error.get("type")) + " " + as_text(error.get("message"))
    return (
        error.get("code") in TIMEOUT_CODES
        or error.get("sdk_code") in TIMEOUT_SDK_CODES
        or bool(TIMEOUT_TEXT.search(text))
    )


def _texts(result: Any) -> list[Any]:
    """The ``text`` of every content block of a returned result."""
    content = result.get("content") if isinstance(result, dict) else None
    return [block.get("text") for block in content or [] if isinstance(block, dict)]


def _followup(followup: Call | None) -> str:
    """``ok`` when the follow-up call's text came back (not as an error), ``failed``, or ``none`` (not made)."""
    if not followup:
        return "none"
    returned = followup.get("status") == "returned"
    view = followup.get("model_view")
    if view is not None:  # a framework: the follow-up's text came back (to the model, or in the
        # framework's tool result, e.g. FastMCP's content when its parsed ``data`` is null), not as an error
        returned_text = " ".join(
            [*model_input.strings(view.get("value")), *model_input.strings(followup.get("result"))]
        )
        return "ok" if returned and FOLLOWUP_TEXT in returned_text and view.get("error_flag") is not True else "failed"
    result = followup.get("result") if returned else None
    is_error = isinstance(result, dict) and bool(result.get("isError"))
    return "ok" if FOLLOWUP_TEXT in _texts(result) and not is_error else "failed"


def _server_cancel(journal: list[JournalEvent]) -> str:
    """What the server did about a cancel: ``stopped``, ``not-stopped``, ``none`` (none received)."""
    received = any(e.get("event") == "recv" and e.get("method") == "notifications/cancelled" for e in journal)
    observed = [e for e in journal if e.get("event") == "cancel-observed"]
    if observed and observed[-1].get("producer_stopped"):
        return "stopped"
    return "not-stopped" if received else "none"


def _is_case_call(event: JournalEvent) -> bool:
    """A ``tools/call`` the server received of the case's tool: any tool but the follow-up's
    (``get_account_balance``, or a recorded case's tool)."""
    params = event.get("params")
    return (
        event.get("event") == "recv"
        and event.get("method") == "tools/call"
        and isinstance(params, dict)
        and params.get("name") != FOLLOWUP_CALL["name"]
    )


def wire_protocol(journal: list[JournalEvent]) -> str | None:
    """The revision the client spoke, from the server's journal: that of the case's first tool call,
    else that of the last request the server received (e.g. an ``initialize`` a modern-only server
    refused); None when the server received no request."""
    requests = [event for event in journal if event.get("event") == "recv" and event.get("kind") == "request"]
    calls = [event for event in requests if _is_case_call(event)]
    chosen = calls[0] if calls else (requests[-1] if requests else None)
    return chosen.get("protocol") if chosen else None


def sent_results(journal: list[JournalEvent]) -> list[JournalEvent]:
    """The messages the server sent in answer to the case's tool calls, in order."""
    call_ids = [event.get("id") for event in journal if _is_case_call(event)]
    sends = {event.get("id"): event for event in journal if event.get("event") == "send"}
    return [sends[call_id] for call_id in call_ids if call_id in sends]


def _sent_result(event: JournalEvent) -> Any:
    message = event.get("message")
    return message.get("result") if isinstance(message, dict) else None


class ModelFacts(TypedDict):
    model_channel: str | None
    model_error_seen: bool | None
    model_error_flag: bool | None
    model_excerpt: str | None
    model_kept: str | None
    """Agent hosts, a long payload: how much of it the model read (:func:`model_input.kept`)."""
    model_words: str | None
    """Agent hosts, a long payload: what the host put in front of the model besides it."""
    model_schema_shown: bool | None
    """Agent hosts: whether the request that made the call showed the model the advertised outputSchema."""
    model_blocks: str | None
    """A result with blocks other than text: which of them reached the model (:func:`model_input.blocks`)."""


def _model_facts(returned: list[Call], sent: list[JournalEvent]) -> ModelFacts:
    """What the model read from the first returned call that carries a model view (frameworks)."""
    for call in returned:
        view = call.get("model_view")
        if view is None:
            continue
        value = view.get("value")
        result = _sent_result(sent[0]) if sent else None
        reach = view.get("reach")
        return {
            "model_channel": model_input.channel(value, result, reach),
            "model_error_seen": model_input.error_seen(view),
            "model_error_flag": view.get("error_flag"),
            "model_excerpt": model_input.excerpt(value),
            "model_kept": model_input.kept(reach),
            "model_words": model_input.excerpt(reach["words"], WORDS_EXCERPT) if reach and reach["words"] else None,
            "model_schema_shown": view.get("output_schema_shown"),
            "model_blocks": model_input.blocks(value, result, reach),
        }
    return cast(ModelFacts, dict.fromkeys(ModelFacts.__annotations__))


def _altered_fields(calls: list[Call], sent: list[JournalEvent]) -> list[str]:
    """The result fields in which what a returned call gave its caller differs from what the server sent."""
    fields: list[str] = []
    for call, event in zip(calls, sent, strict=False):  # a call the server never answered has no event
        if call.get("status") == "returned":
            fields += [
                name for name in compare.differences(call.get("result"), _sent_result(event)) if name not in fields
            ]
    return fields


def facts(record: CellRecord) -> dict[str, Any]:
    """The flat facts of one cell record (the columns :data:`RULES` read)."""
    observation: Observation = record["observation"] or {}
    proc = record["process"]
    journal = record["journal"]
    calls = observation.get("calls") or []
    initialize = observation.get("initialize") or {}
    raised = [call for call in calls if call.get("status") == "raised"]
    returned = [call for call in calls if call.get("status") == "returned"]
    sent = sent_results(journal)
    framework = record.get("kind") in MODEL_VIEW_KINDS
    altered_fields = [] if framework else _altered_fields(calls, sent)
    first_error = (
        initialize.get("error")
        if initialize.get("status") == "raised"
        else (raised[0].get("error") if raised else None)
    )
    transport_errors = observation.get("transport_errors") or []
    cancelled = any(call.get("cancelled_after_ms") is not None for call in raised)
    exits = [event for event in journal if event.get("event") == "exit"]
    return {
        "key": record["key"],
        "client": record["column"],
        "adapter": record["adapter"],
        "kind": record.get("kind", "sdk"),
        "variant": record["variant"],
        "case": record["case"],
        "family": record["family"],
        "schema": record["schema"],
        "transport": record["transport"],
        "protocol": record.get("protocol", LEGACY_PROTOCOL),
        "wire_protocol": wire_protocol(journal),
        "harness_error": record["harness_error"],
        "timed_out": bool(proc and proc["timed_out"]),
        "has_observation": record["observation"] is not None,
        "exit_code": proc["exit_code"] if proc else None,
        "init_raised": initialize.get("status") == "raised",
        "call_raised": bool(raised),
        "call_is_error": any(isinstance(c.get("result"), dict) and bool(c["result"].get("isError")) for c in returned),
        **_model_facts(returned, sent),
        "cancelled_by_caller": cancelled,
        "client_timeout": is_client_timeout(first_error) and not cancelled,
        "adapter_deadline": first_error is not None and first_error.get("type") == ADAPTER_DEADLINE,
        "followup": _followup(observation.get("followup")),
        "altered": bool(altered_fields) if returned and sent and not framework else None,
        "altered_fields": ",".join(altered_fields),
        "error": first_error,
        "transport_errors": "; ".join(error_text(e) for e in transport_errors)[:2000],
        "transport_error_count": len(transport_errors),
        "unhandled": any(error.get("source") in UNHANDLED_SOURCES for error in transport_errors),
        "package_version_observed": observation.get("package_version"),
        "duration_ms": sum(float(c.get("duration_ms") or 0) for c in calls) if calls else None,
        "wall_ms": proc["wall_ms"] if proc else None,
        "frame_bytes": max((event.get("bytes", 0) for event in sent), default=None),
        "tools_list_called": any(e.get("event") == "recv" and e.get("method") == "tools/list" for e in journal),
        "server_exit": exits[-1].get("reason") if exits else None,
        "server_cancel": _server_cancel(journal),
        "budget_ms": record["budget_ms"],
        "ran_at": record.get("finished_at"),
        "reused_from": record.get("reused_from"),
    }


Condition = Callable[[pd.DataFrame], pd.Series]

RULES: tuple[tuple[str, str, Condition], ...] = (
    # (outcome, stage, condition over the facts frame); the first that holds wins, else "pass"
    ("harness-error", "harness", lambda f: f.harness_error.notna()),
    ("timeout", "call", lambda f: f.timed_out | f.adapter_deadline),
    ("crash", "process", lambda f: ~f.has_observation),
    ("crash", "unhandled", lambda f: f.unhandled),
    ("disconnect", "initialize", lambda f: f.init_raised),
    ("timeout", "call", lambda f: f.call_raised & f.client_timeout),
    ("disconnect", "call", lambda f: f.call_raised & f.followup.ne("ok")),
    ("disconnect", "followup", lambda f: f.followup.ne("ok")),
    ("reject", "call", lambda f: f.call_raised),
    ("error-result", "call", lambda f: f.call_is_error),
    # a framework that hands the model an error (marked, or as the message text) in place of the result
    ("error-result", "call", lambda f: f.model_error_seen.eq(True) | f.model_channel.eq("error-text")),
)


def classify(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``outcome``, ``stage``, ``timeout_by`` and the error columns to a facts frame."""
    frame = frame.copy()
    conditions = [rule(frame).fillna(False).astype(bool) for _, _, rule in RULES]
    frame["outcome"] = np.select(conditions, [o for o, _, _ in RULES], default="pass")
    frame["stage"] = np.select(conditions, [s for _, s, _ in RULES], default="call")
    frame["timeout_by"] = np.select(
        [
            frame["outcome"].eq("timeout") & (frame["timed_out"] | frame["adapter_deadline"]),
            frame["outcome"].eq("timeout"),
        ],
        ["harness", "client"],
        default="",
    )
    errors = frame["error"]
    frame["error_type"] = errors.map(lambda e: e.get("type") if e else None).astype(object)
    frame["error_code"] = errors.map(lambda e: e.get("code") if e else None).astype("Int64")
    frame["error_sdk_code"] = errors.map(lambda e: e.get("sdk_code") if e else None).astype(object)
    frame["error_message"] = errors.map(lambda e: as_text(e.get("message")) if e else None).astype(object)
    harness_killed = frame["outcome"].eq("timeout") & frame["timed_out"]
    frame.loc[harness_killed, "error_type"] = "HarnessTimeout"
    frame.loc[harness_killed, "error_message"] = frame.loc[harness_killed, "budget_ms"].map(
        lambda ms: f"no observation within the cell budget of {ms / 1000:.0f} s; the harness killed the process group"
    )
    crashed = frame["outcome"].eq("crash")
    frame.loc[crashed, "error_type"] = "AdapterCrash"
    frame.loc[crashed, "error_message"] = frame.loc[crashed, "exit_code"].map(
        lambda code: f"the adapter exited with code {code} without writing an observation"
    )
    failed = frame["outcome"].eq("harness-error")
    frame.loc[failed, "error_type"] = "HarnessError"
    frame.loc[failed, "error_message"] = frame.loc[failed, "harness_error"]
    viewed = frame["kind"].isin(MODEL_VIEW_KINDS)
    frame["model_aborted"] = (viewed & frame["call_raised"]).where(viewed)
    frame["altered"] = frame["altered"].astype("boolean")
    frame.loc[~frame["outcome"].isin(["pass", "error-result"]), "altered"] = pd.NA
    return frame


def short_error(row: Mapping[str, Any]) -> str:
    """The one-line error shown in a matrix cell (``row``: a classified row, a Series or a dict)."""
    error_type = row.get("error_type")
    if error_type is None or pd.isna(error_type) or not error_type:
        return ""
    code = row.get("error_code")
    if pd.isna(code):
        code = row.get("error_sdk_code")
    head = f"{row['error_type']}" + (f" {code}" if pd.notna(code) and code != "" else "")
    message = str(row.get("error_message") or "").strip().splitlines()
    text = f"{head}: {message[0] if message else ''}"
    return text if len(text) <= SHORT_MESSAGE else text[: SHORT_MESSAGE - 1] + "…"


def cells_frame(records: list[CellRecord], meta: RunMeta) -> pd.DataFrame:
    """One classified row per cell, with the run's package versions."""
    frame = pd.DataFrame([facts(record) for record in records])
    if frame.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    frame = classify(frame)
    adapters = meta.get("adapters", {})
    frame["package"] = frame["adapter"].map(lambda name: (adapters.get(name) or {}).get("package"))
    frame["package_version"] = frame["adapter"].map(lambda name: (adapters.get(name) or {}).get("package_version"))
    frame["package_version"] = frame["package_version"].fillna(frame["package_version_observed"])
    return (
        frame[list(COLUMNS)]
        .sort_values(["family", "case", "protocol", "schema", "client"], kind="stable")
        .reset_index(drop=True)
    )
