"""Renders ``docs/fault-catalog.md`` from the catalog, so the document cannot drift from the code.

``python -m harness catalog > docs/fault-catalog.md`` regenerates it; a test compares the two.
"""

from __future__ import annotations

from . import catalog

INTRO = """# Fault catalog

Generated from `harness/matrix/catalog.py` by `python -m harness catalog > docs/fault-catalog.md`; a test
keeps the two equal. The reference server (`servers/reference/cases.py`) implements every case.

Every case answers the tool `get_account_balance(account_id="ACC-4471")`, whose correct answer is
`{"account_id": "ACC-4471", "balance_minor": 4071877, "currency": "USD", "as_of": "2026-01-15T09:30:00Z"}`
with the outputSchema: all four properties required, `balance_minor` an integer,
`additionalProperties: false`. Schema cases run twice: with the outputSchema **advertised** in
`tools/list` and **hidden** (the tool is listed without one). Size cases list the tool without an
outputSchema (schema mode `none`).

After the case's call(s), every adapter makes a follow-up call `echo(text="follow-up")` on the same
session; the server answers it correctly in every case. Whether it succeeds decides `reject` versus
`disconnect`.

Cases run under each protocol revision where they mean something (the *protocols* column): the
reference server speaks 2025-11-25 (the `initialize` handshake) or 2026-07-28 (stateless: the
version and capabilities in every request's `_meta`, `server/discover`, `resultType` on every
result). A column runs the catalog under each revision its manifest declares (`protocols`); under
any other it runs `ok` only, which shows what the client does with a server of that revision.
Clauses name the revision they quote.

Cases run on every transport where they mean something: stdio, and Streamable HTTP with JSON
(`http-json`) or SSE (`http-sse`) answers; the `transport` family is about the stdio pipe and runs
on stdio only. `cancel-then-followup` asks the adapter to cancel its call after 1 s with the
client's own cancellation mechanism.

A case never says what a client should do: where the specification constrains the client, the
clause is quoted with its level (MUST / SHOULD); otherwise the level is `unspecified`.

Each cell has a time budget: 30 s (schema), 60 s (size), 20 s (transport, protocol), half as
much again per further call; the client's own request timeout is 60 % of it. The *waits* column
says why a case's cells mostly wait rather than compute: such cells run beside the CPU-bound ones,
in slots of their own (`run --wait-jobs`). Where the outcome does not depend on how long the client
waits, the case has a smaller budget of its own; the section after the tables says why it is enough.
"""


def markdown() -> str:
    """The fault catalog as Markdown."""
    lines = [INTRO]
    for family in catalog.FAMILIES:
        lines.append(f"\n## Family `{family}`\n")
        lines.append(
            "| case | what the server does | what it sends | level | clause | calls | transports | protocols | waits |"
        )
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for case in catalog.CASES:
            if case.family != family:
                continue
            cells = (
                f"`{case.id}`",
                case.description,
                case.sends,
                case.level,
                case.clause,
                str(case.calls),
                ", ".join(case.transports),
                ", ".join(case.protocols),
                case.waits or "",
            )
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    own = [case for case in catalog.CASES if case.budget_s is not None]
    if own:
        lines.append("\n## Budgets of their own\n")
        lines.append("| case | budget | why it is enough |")
        lines.append("| --- | --- | --- |")
        lines.extend(f"| `{case.id}` | {case.budget_s:g} s | {case.budget_why or ''} |" for case in own)
    return "\n".join(lines) + "\n"
