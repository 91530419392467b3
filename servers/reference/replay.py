"""A recorded case (``--case-file PATH``): a user's tool, listed and answered as its server did.

The case file is what ``python -m harness record`` wrote (the harness checks it before a run:
``harness/recorded/case_files.py``): the tool's ``tools/list`` entry and the ``tools/call`` result exactly
as sent, and the call's arguments. The server lists the tool in place of ``get_account_balance``
(its ``outputSchema`` only with ``--schema advertised``), beside the follow-up tool ``echo``, and
answers a call with the recorded arguments with the recorded result, unchanged: under 2026-07-28
too, where the recorded result already carries what that revision adds (``resultType``, ``_meta``).
"""

from __future__ import annotations

import json
from typing import Any

from cases import Case

CASE_FILE_VERSION = 1


class CaseFileError(Exception):
    """A case file this server cannot replay (the message names the file and the field)."""


def load(path: str) -> Case:
    """The case that replays the case file at ``path``."""
    try:
        with open(path, encoding="utf-8") as handle:  # not pathlib: the server starts once per cell
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise CaseFileError(f"{path}: cannot read a case file: {exc}") from None
    if not isinstance(data, dict) or data.get("case_file") != CASE_FILE_VERSION:
        raise CaseFileError(f"{path}: not a case file of version {CASE_FILE_VERSION}")
    tool, arguments, result = data.get("tool"), data.get("arguments"), data.get("result")
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        raise CaseFileError(f"{path}: field 'tool': expected a tools/list entry with a name")
    if not isinstance(arguments, dict) or not isinstance(result, dict):
        raise CaseFileError(f"{path}: fields 'arguments' and 'result': expected objects")
    recorded: dict[str, Any] = result

    def as_sent(_complete: dict[str, Any]) -> dict[str, Any]:
        return recorded

    return Case(
        f"rec-{data.get('name')}",
        result=lambda: recorded,
        modern=as_sent,
        tool=tool,
        arguments=arguments,
    )
