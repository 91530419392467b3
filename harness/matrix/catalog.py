"""The fault catalog: every case's id, family, description and the spec clause it touches.

The catalog owns the names; ``servers/reference/cases.py`` implements them (a test keeps the two
in step). A case never states an expected outcome for any client: outcomes are observed. Where
the specification constrains the client, ``clause`` quotes it and ``level`` says how strongly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from harness.records import Protocol as Protocol  # the axis types, re-exported where the axes are
from harness.records import Transport as Transport

Family = Literal["schema", "size", "transport", "protocol"]
Level = Literal["MUST", "SHOULD", "unspecified"]
SchemaMode = Literal["advertised", "hidden", "none"]

PROTOCOLS: tuple[Protocol, ...] = ("2025-11-25", "2026-07-28")
"""The protocol axis: the revision the reference server speaks in a cell, and the one the client is
asked for (``servers/reference/protocol.py``: the handshake era up to 2025-11-25, stateless 2026-07-28)."""
LEGACY_PROTOCOL: Protocol = "2025-11-25"


@dataclass(frozen=True)
class TransportKind:
    """One transport of the matrix: its name, whether it is Streamable HTTP, and how a response is framed."""

    name: Transport
    http: bool
    framing: str
    content_type: str | None = None
    """The ``Content-Type`` of the answer to a POST (HTTP only): how a live server's framing is recognised."""


TRANSPORT_KINDS: dict[str, TransportKind] = {
    kind.name: kind
    for kind in (
        TransportKind("stdio", False, "newline-delimited JSON-RPC on the server's stdin and stdout"),
        TransportKind("http-json", True, "Streamable HTTP, each POST answered with one JSON body", "application/json"),
        TransportKind("http-sse", True, "Streamable HTTP, each POST answered with an SSE stream", "text/event-stream"),
    )
}
"""The one registry of transports; every list of them, and every "is this HTTP", comes from here."""
TRANSPORTS: tuple[Transport, ...] = tuple(kind.name for kind in TRANSPORT_KINDS.values())
ERA_CASES = ("ok",)
"""The cases every column runs under a revision its manifest does not declare (``protocols``): what
a client does when the server speaks only that revision (e.g. a handshake-era client against a
server that answers ``initialize`` with ``UnsupportedProtocolVersion``)."""

SPEC = "MCP specification 2025-11-25, server/tools"
VALIDATE = "Clients SHOULD validate structured results against this schema."
CONFORM = "If an output schema is provided: Servers MUST provide structured results that conform to this schema."
BACKCOMPAT = (
    "For backwards compatibility, a tool that returns structured content SHOULD also return the "
    "serialized JSON in a TextContent block."
)
IS_ERROR = "Tool Execution Errors: Reported in tool results with isError: true."
CONTENT_REQUIRED = "CallToolResult.content: ContentBlock[] is a required property (schema.ts)."
NO_LIMIT = "The specification sets no limit on message or result size."
STDOUT_ONLY_MCP = (
    "The server MUST NOT write anything to its stdout that is not a valid MCP message (basic/transports, stdio)."
)
NEWLINE = "Messages are delimited by newlines, and MUST NOT contain embedded newlines (basic/transports, stdio)."
STDERR = (
    "The server MAY write UTF-8 strings to its standard error (stderr) for logging purposes. Clients MAY "
    "capture, forward, or ignore this logging (basic/transports, stdio)."
)
SAME_ID = "Responses MUST include the same ID as the request they correspond to (basic, JSON-RPC responses)."
TIMEOUTS = (
    "Implementations SHOULD establish timeouts for all sent requests ... When the request has not received a "
    "success or error response within the timeout period, the sender SHOULD issue a cancellation "
    "notification for that request and stop waiting for a response (basic/lifecycle, timeouts)."
)
SHUTDOWN = "Nothing specifies what a client does when the server exits or the stream ends mid-request."
CANCEL = (
    "Receivers of cancellation notifications SHOULD stop processing the cancelled request, free associated "
    "resources and not send a response for the cancelled request (basic/utilities/cancellation)."
)
VERSION = (
    "If the client does not support the version in the server's response, it SHOULD disconnect "
    "(basic/lifecycle, version negotiation)."
)
ERROR_OBJECT = "A JSON-RPC error has an integer code and a string message (JSON-RPC 2.0; schema.ts JSONRPCError)."
CONTENT_TYPES = (
    "ContentBlock is TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource, "
    "each with a required type (schema.ts)."
)

SPEC_2026 = "MCP specification 2026-07-28"
STRUCTURED_ANY = (
    "structuredContent: any JSON value (object, array, string, number, boolean, or null) that conforms to "
    "the tool's outputSchema if one is defined; outputSchema: any JSON Schema 2020-12 (2026-07-28 schema.ts). "
    'Under 2025-11-25 structuredContent is an object and outputSchema has type "object".'
)
DIALECT = (
    "Clients and servers MUST support JSON Schema 2020-12 for schemas without an explicit $schema field "
    "(basic, JSON Schema Usage; 2025-11-25 and 2026-07-28)."
)
REF_NETWORK = (
    "Implementations MUST NOT automatically dereference $ref values that resolve to a network URI. Schemas "
    "that fail to validate due to an unresolved external $ref SHOULD be rejected rather than silently "
    "treated as permissive (2026-07-28 basic, $ref Resolution)."
)
COMPOSITION = (
    "Implementations SHOULD apply reasonable bounds, such as a maximum schema depth, a cap on the total "
    "number of subschemas, or a per-validation time budget (2026-07-28 basic, Composition-Keyword Resource Use)."
)
RESULT_TYPE = (
    "The result MUST include a resultType field. For backward compatibility with servers implementing "
    "earlier protocol versions, which do not include resultType, clients MUST treat an absent resultType "
    'as "complete" (2026-07-28 basic, ResultType).'
)
UNKNOWN_RESULT_TYPE = (
    "A resultType of any value unrecognized by the client MUST be considered invalid (2026-07-28 basic, ResultType)."
)
INPUT_REQUESTS = (
    "Servers MUST NOT send an inputRequests that the client has not declared support for in its capabilities "
    "... Servers MAY choose to return an InputRequiredResult on multiple attempts at the same request "
    "(2026-07-28 basic/patterns/mrtr)."
)
SERVER_INFO = (
    "Servers SHOULD include io.modelcontextprotocol/serverInfo on every response ... Clients SHOULD NOT use "
    "it to change their behavior (2026-07-28 schema.ts, ResultMetaObject)."
)
UNSUPPORTED = (
    "If the server does not implement the requested version, it MUST respond with an "
    "UnsupportedProtocolVersionError listing the versions it does support. The client SHOULD select a "
    "mutually supported version from the supported list and retry the request, or surface an error to the "
    "user if no compatible version exists (2026-07-28 basic/versioning)."
)
MODERN_ONLY: tuple[Protocol, ...] = ("2026-07-28",)


WAITS_LATE = "the server answers after a 2 s delay"
WAITS_OWN_TIMEOUT = "a client that does not take the answer as one waits for its own request timeout"
TIMEOUT_BUDGET_S = 15.0
TIMEOUT_BUDGET_WHY = (
    "The outcome is the client's own request timeout, or an error before it, whatever the timeout's "
    "length: 15 s (not the family's 20 s) gives that timeout 9 s (60 %) and the follow-up and the "
    "close the rest, with more than a second to spare for a Python SDK that first imports itself."
)


@dataclass(frozen=True)
class Case:
    """One fault case of the catalog."""

    id: str
    family: Family
    description: str
    clause: str
    level: Level
    schema_modes: tuple[SchemaMode, ...]
    calls: int = 1
    sends: str = ""
    transports: tuple[Transport, ...] = TRANSPORTS
    """The transports on which the case means something (wire faults of stdio: stdio only)."""
    cancel_after_ms: int | None = None
    """When set, the adapter cancels the case's call this long after sending it."""
    waits: str | None = None
    """Why a cell of this case spends most of its time waiting rather than computing (the server
    answers late or never, writes slowly, or the client waits for its own timeout). The runner runs
    such cells beside the CPU-bound ones, with a limit of their own (``run --wait-jobs``)."""
    budget_s: float | None = None
    """The cell budget when it is not the family's (:data:`harness.matrix.cells.BUDGET_S`): a case whose
    outcome does not depend on how long the client waits gets the smallest budget that still lets
    the client's own timeout (a share of the budget) fire first; ``budget_why`` says why it is enough."""
    budget_why: str | None = None
    protocols: tuple[Protocol, ...] = PROTOCOLS
    """The revisions under which the case means something (a fault of the ``initialize`` answer: the
    handshake era only)."""


def _schema(case_id: str, description: str, clause: str, level: Level, sends: str, **extra: Any) -> Case:
    return Case(case_id, "schema", description, clause, level, ("advertised", "hidden"), sends=sends, **extra)


def _size(case_id: str, description: str, sends: str, calls: int = 1) -> Case:
    return Case(case_id, "size", description, NO_LIMIT, "unspecified", ("none",), calls=calls, sends=sends)


def _transport(case_id: str, description: str, clause: str, level: Level, sends: str, **extra: Any) -> Case:
    return Case(
        case_id, "transport", description, clause, level, ("none",), sends=sends, transports=("stdio",), **extra
    )


def _protocol(case_id: str, description: str, clause: str, level: Level, sends: str, **extra: Any) -> Case:
    return Case(case_id, "protocol", description, clause, level, ("none",), sends=sends, **extra)


CASES: tuple[Case, ...] = (
    _schema(
        "ok",
        "Control: conforming structuredContent and the same data as JSON text.",
        CONFORM,
        "MUST",
        "content=[text(JSON)], structuredContent={account_id, balance_minor, currency, as_of}",
    ),
    _schema(
        "no-structured",
        "outputSchema declared, but only a text block is returned.",
        CONFORM,
        "MUST",
        "content=[text(JSON)], no structuredContent",
    ),
    _schema(
        "type-swap",
        'balance_minor (integer in the schema) sent as the string "4071877".',
        VALIDATE,
        "SHOULD",
        'structuredContent.balance_minor = "4071877"',
    ),
    _schema(
        "drop-required",
        "The required field currency is missing.",
        VALIDATE,
        "SHOULD",
        "structuredContent without currency",
    ),
    _schema(
        "extra-field",
        "An extra field (branch) although additionalProperties is false.",
        VALIDATE,
        "SHOULD",
        'structuredContent with branch="Zurich-3"',
    ),
    _schema(
        "wrong-container",
        "structuredContent is an array holding the object, not the object.",
        "structuredContent: { [key: string]: unknown } (an object, 2025-11-25 schema.ts). " + VALIDATE + " Under "
        "2026-07-28 structuredContent may be any JSON value that conforms to the outputSchema (an object here).",
        "MUST",
        "structuredContent=[{...}]",
    ),
    _schema(
        "null-structured",
        "structuredContent is JSON null.",
        "structuredContent is an optional object (2025-11-25 schema.ts); null is not an object. Under 2026-07-28 "
        "null is a JSON value, valid where the outputSchema allows it (not here: it is an object).",
        "MUST",
        "structuredContent=null",
    ),
    _schema(
        "iserror-bad-structured",
        "isError with structuredContent that does not match the schema.",
        IS_ERROR + " The schema says nothing about validating error results.",
        "unspecified",
        'isError=true, structuredContent={error: "ledger_unavailable"}',
    ),
    _schema(
        "iserror-plain",
        "isError with a text message and no structuredContent.",
        IS_ERROR,
        "unspecified",
        "isError=true, content=[text(message)]",
    ),
    _schema(
        "iserror-valid-structured",
        "isError with conforming structuredContent.",
        IS_ERROR,
        "unspecified",
        "isError=true, conforming structuredContent and its JSON text",
    ),
    _schema(
        "diverge",
        "The text block names another account and amount than structuredContent.",
        BACKCOMPAT,
        "SHOULD",
        "text = ACC-5518/129900 EUR, structuredContent = ACC-4471/4071877 USD",
    ),
    _schema(
        "empty-content-structured",
        "content is an empty list; structuredContent is valid.",
        BACKCOMPAT,
        "SHOULD",
        "content=[], conforming structuredContent",
    ),
    _schema(
        "missing-content",
        "No content key at all; structuredContent is valid.",
        CONTENT_REQUIRED,
        "MUST",
        "no content key, conforming structuredContent",
    ),
    _schema(
        "corrupt-plausible",
        "Schema-valid data about another account (ACC-5518).",
        CONFORM + " (conformance cannot detect wrong data)",
        "unspecified",
        "conforming structuredContent and text for ACC-5518",
    ),
    _schema(
        "error",
        "isError with the message an SDK server produces for a raised exception.",
        IS_ERROR,
        "unspecified",
        'isError=true, content=[text("Error executing tool ...")]',
    ),
    _schema(
        "empty-string", "One text block with the empty string; nothing else.", CONFORM, "MUST", 'content=[text("")]'
    ),
    _schema(
        "truncate",
        "The JSON text is cut in half and structuredContent is dropped.",
        CONFORM,
        "MUST",
        "content=[text(first half of the JSON)]",
    ),
    _schema(
        "latency",
        "The correct answer, after a 2 s delay.",
        "Implementations SHOULD establish timeouts for all sent requests (basic/lifecycle).",
        "SHOULD",
        "the ok result after 2 s",
        waits=WAITS_LATE,
    ),
    _schema(
        "structured-array",
        "structuredContent is an array of accounts, and the outputSchema says so (type array).",
        STRUCTURED_ANY,
        "MUST",
        "outputSchema={type: array, items: account}, structuredContent=[{...}]",
    ),
    _schema(
        "structured-string",
        "structuredContent is a string, and the outputSchema says so (type string).",
        STRUCTURED_ANY,
        "MUST",
        'outputSchema={type: string}, structuredContent="ACC-4471: 40718.77 USD"',
    ),
    _schema(
        "structured-number",
        "structuredContent is the balance as a number, and the outputSchema says so (type integer).",
        STRUCTURED_ANY,
        "MUST",
        "outputSchema={type: integer}, structuredContent=4071877",
    ),
    _schema(
        "structured-null",
        "structuredContent is null, and the outputSchema allows it (anyOf account, null).",
        STRUCTURED_ANY,
        "MUST",
        'outputSchema={anyOf: [account, {type: null}]}, structuredContent=null, text "null"',
    ),
    _schema(
        "schema-ref-defs",
        "The outputSchema reaches the account through $ref/$defs, with 2020-12 keywords; the result conforms.",
        DIALECT,
        "MUST",
        "outputSchema={$ref: #/$defs/account, $defs, unevaluatedProperties: false, ...}, the ok result",
    ),
    _schema(
        "schema-ref-unresolvable",
        "The outputSchema's currency is a $ref to a network URI that resolves nowhere (.invalid).",
        REF_NETWORK,
        "SHOULD",
        "properties.currency={$ref: https://schemas.example.invalid/ledger/currency.json}, the ok result",
    ),
    _schema(
        "schema-composition-heavy",
        "The outputSchema chains 16 $defs, each allOf the next twice: 65,536 evaluations without bounds.",
        COMPOSITION,
        "SHOULD",
        "outputSchema with $defs level0..level16 (allOf [next, next]), the ok result",
    ),
    _size("text-9mib", "One text block of 9,437,184 ASCII bytes.", "text of 9 MiB"),
    _size("text-10mib", "One text block of 10,485,760 ASCII bytes.", "text of 10 MiB"),
    _size("text-12mib", "One text block of 12,582,912 ASCII bytes.", "text of 12 MiB"),
    _size(
        "cjk-3m",
        "One text block of 3,000,000 CJK characters (9,000,000 UTF-8 bytes).",
        "3,000,000 ideographs, 3 bytes each",
    ),
    _size(
        "cjk-3.5m",
        "One text block of 3,500,000 CJK characters (10,500,000 UTF-8 bytes).",
        "3,500,000 ideographs, 3 bytes each",
    ),
    _size(
        "blob-7mib",
        "One image block of 7,340,032 raw bytes (base64 in data).",
        "image/png, 7 MiB raw, 9,786,712 base64 characters",
    ),
    _size(
        "blob-8mib",
        "One image block of 8,388,608 raw bytes (base64 in data).",
        "image/png, 8 MiB raw, 11,184,812 base64 characters",
    ),
    _size("many-blocks", "100,000 small text blocks in one result.", '100,000 x text("block NNNNNN")'),
    _size(
        "three-4mib",
        "Three calls in a row on one session, each answered with 4 MiB of text.",
        "3 x text of 4 MiB",
        calls=3,
    ),
    _transport(
        "stdout-noise",
        "A non-JSON log line on stdout just before the response.",
        STDOUT_ONLY_MCP,
        "MUST",
        '"[ledger] DEBUG fetching balance ..." then the ok result',
    ),
    _transport(
        "stdout-banner",
        "A banner line on stdout before the initialize answer.",
        STDOUT_ONLY_MCP,
        "MUST",
        '"Reference ledger server 0.1.0 - listening on stdio ..." then the initialize answer',
        protocols=(LEGACY_PROTOCOL,),
    ),
    _transport(
        "stderr-flood",
        "8 MiB of log lines on stderr while answering.",
        STDERR,
        "unspecified",
        "8,388,608 bytes on stderr, then the ok result",
    ),
    _transport(
        "malformed-frame",
        "The response frame is cut in half: one line of invalid JSON.",
        NEWLINE,
        "MUST",
        "the first half of the ok frame, then a newline",
        waits=WAITS_OWN_TIMEOUT,
        budget_s=TIMEOUT_BUDGET_S,
        budget_why=TIMEOUT_BUDGET_WHY,
    ),
    _transport(
        "partial-frame-eof",
        "Half of the response frame without a newline, then the server exits.",
        SHUTDOWN,
        "unspecified",
        "half a frame, then exit(0)",
    ),
    _transport(
        "exit-mid-call", "The server exits without answering the call.", SHUTDOWN, "unspecified", "nothing; exit(3)"
    ),
    _transport(
        "no-response",
        "The call is never answered; later requests are.",
        TIMEOUTS,
        "SHOULD",
        "nothing for the call (the follow-up is answered)",
        waits="the call is never answered: the client waits for its own timeout",
        budget_s=TIMEOUT_BUDGET_S,
        budget_why=TIMEOUT_BUDGET_WHY,
    ),
    _transport(
        "wrong-id",
        "The response carries another id (request id + 1000).",
        SAME_ID,
        "MUST",
        "the ok result with id + 1000",
        waits=WAITS_OWN_TIMEOUT,
        budget_s=TIMEOUT_BUDGET_S,
        budget_why=TIMEOUT_BUDGET_WHY,
    ),
    _transport("duplicate-response", "The response is sent twice.", SAME_ID, "MUST", "the ok result, twice"),
    _transport(
        "interleaved-notifications",
        "Log notifications (and progress, when the client asked for it) before the result.",
        "Notifications may arrive at any time; progress only for a progressToken the request provided "
        "(basic/utilities/progress).",
        "unspecified",
        "3 x notifications/message (+ notifications/progress), then the ok result",
    ),
    _transport(
        "crlf-framing",
        "Every frame ends in \\r\\n instead of \\n.",
        NEWLINE,
        "unspecified",
        "frames terminated by CR LF",
    ),
    _transport(
        "slow-writer",
        "A 32 MiB result written in 64 KiB chunks with a 2 ms pause; the journal records how long the writes blocked.",
        NO_LIMIT,
        "unspecified",
        "32 MiB of text, slowly",
        budget_s=120.0,
        budget_why=(
            "Reading the 32 MiB takes a client up to 20 s of a core on two cores (the Kotlin SDK 20 s, the "
            "Python SDKs 11 s, raw JSON-RPC 2 s) and two to three times as long on a loaded machine: with "
            "60 s (a 36 s client timeout) the Kotlin and Python SDKs' stdio cells timed out at a load "
            "average of 7 and passed or disconnected idle (docs/benchmarks.md, 2026-12-03). 120 s gives the "
            "client's own timeout 72 s, over three times the slowest idle read, so the outcome is about the "
            "slowly written frame, not the machine's load; only a client that never finishes waits it out."
        ),
    ),
    _transport(
        "cancel-then-followup",
        "The call works slowly (a log tick every 200 ms for 8 s); the adapter cancels it after 1 s, then "
        "the follow-up must complete. The journal records the cancel and whether the producer stopped.",
        CANCEL,
        "SHOULD",
        "log/progress ticks until cancelled; no result once cancelled",
        waits="the call works slowly (a tick every 200 ms for 8 s) until the client cancels it after 1 s",
        cancel_after_ms=1000,
    ),
    _protocol(
        "version-mismatch",
        "The initialize answer names protocolVersion 1999-01-01.",
        VERSION,
        "SHOULD",
        'protocolVersion = "1999-01-01", then normal answers',
        protocols=(LEGACY_PROTOCOL,),
    ),
    _protocol(
        "jsonrpc-error",
        "tools/call answered with a JSON-RPC error.",
        ERROR_OBJECT,
        "MUST",
        'error {code: -32603, message: "Internal error: ledger unavailable"}',
    ),
    _protocol(
        "jsonrpc-error-data",
        "tools/call answered with a JSON-RPC error carrying data.",
        ERROR_OBJECT,
        "MUST",
        "error {code: -32603, message, data: {retry_after_s, ledger, account_id}}",
    ),
    _protocol(
        "error-no-message",
        "A JSON-RPC error object without a message.",
        ERROR_OBJECT,
        "MUST",
        "error {code: -32603}",
        waits=WAITS_OWN_TIMEOUT,
        budget_s=TIMEOUT_BUDGET_S,
        budget_why=TIMEOUT_BUDGET_WHY,
    ),
    _protocol(
        "resulttype-missing",
        "Under 2026-07-28, the call's result has no resultType.",
        RESULT_TYPE,
        "MUST",
        "the ok result without resultType",
        protocols=MODERN_ONLY,
    ),
    _protocol(
        "resulttype-unknown",
        'Under 2026-07-28, the call\'s result has resultType "partial", which no revision defines.',
        UNKNOWN_RESULT_TYPE,
        "MUST",
        'the ok result with resultType="partial"',
        protocols=MODERN_ONLY,
    ),
    _protocol(
        "input-required-unanswerable",
        "Under 2026-07-28, every call is answered input_required with an elicitation the client never "
        "declared it can answer (retries too).",
        INPUT_REQUESTS,
        "MUST",
        'resultType="input_required", inputRequests={confirm_read: elicitation/create (form)}, requestState',
        protocols=MODERN_ONLY,
    ),
    _protocol(
        "no-server-info",
        "Under 2026-07-28, the call's result has no _meta serverInfo.",
        SERVER_INFO,
        "SHOULD",
        "the ok result without _meta io.modelcontextprotocol/serverInfo",
        protocols=MODERN_ONLY,
    ),
    _protocol(
        "unsupported-version",
        "Under 2026-07-28, the server claims to speak only 2027-03-15 and refuses every request with "
        "UnsupportedProtocolVersion.",
        UNSUPPORTED,
        "SHOULD",
        'error {code: -32022, data: {supported: ["2027-03-15"], requested}} for every request',
        protocols=MODERN_ONLY,
    ),
    _protocol(
        "unknown-content-type",
        "A content block of an unknown type (hologram) beside the text.",
        CONTENT_TYPES,
        "MUST",
        'content=[{type: "hologram", ...}, text(JSON)]',
    ),
    _protocol("content-missing-type", "A content block without type.", CONTENT_TYPES, "MUST", "content=[{text: JSON}]"),
    _protocol(
        "resource-link",
        "A resource_link block beside the text.",
        CONTENT_TYPES,
        "unspecified",
        "content=[text(JSON), resource_link ledger://accounts/ACC-4471]",
    ),
    _protocol(
        "embedded-resource",
        "The data as an embedded text resource only.",
        CONTENT_TYPES,
        "unspecified",
        "content=[resource {uri, mimeType: application/json, text: JSON}]",
    ),
    _protocol(
        "audio",
        "An audio block (a WAV header) beside the text.",
        CONTENT_TYPES,
        "unspecified",
        "content=[text(JSON), audio audio/wav]",
    ),
)

FAMILIES: tuple[Family, ...] = ("schema", "size", "transport", "protocol")
BY_ID: dict[str, Case] = {case.id: case for case in CASES}


def get(case_id: str) -> Case:
    """The case with this id; ``KeyError`` with the known ids otherwise."""
    try:
        return BY_ID[case_id]
    except KeyError:
        raise KeyError(f"unknown case {case_id!r}; known: {', '.join(BY_ID)}") from None
