"""The typed records that cross module boundaries: the cell file, the observation, the cell record,
the run metadata.

One home for their shapes, shared by the observation validator (:mod:`harness.run.observation`),
the runner, the store, the classifier, the report and the tests; ``docs/adapters.md`` documents
the same fields for adapter authors. The shapes are JSON: they are stored as JSON lines and read
back as plain dicts, so they are :class:`~typing.TypedDict` (a misspelt key is a type error under
``nox -s typecheck``) rather than classes.

``total=False`` marks the keys an adapter or an older run may leave out; readers use ``.get``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

CONTRACT = 1
"""The version of the cell-file / observation contract (``docs/adapters.md``)."""


Protocol = Literal["2025-11-25", "2026-07-28"]
"""A protocol revision of the matrix's axis (:data:`harness.matrix.catalog.PROTOCOLS` lists them)."""
Transport = Literal["stdio", "http-json", "http-sse"]
"""A transport of the matrix (:data:`harness.matrix.catalog.TRANSPORT_KINDS` describes each)."""


class ToolCall(TypedDict):
    """One call an adapter makes: a tool's name and its arguments; ``cancel_after_ms`` when the
    adapter is to cancel it that long after it started."""

    name: str
    arguments: dict[str, Any]
    cancel_after_ms: NotRequired[int]


class ServerSpec(TypedDict):
    """How the adapter reaches the cell's server: a command it starts (stdio, an agent host's HTTP
    cell) or the URL of the one the harness started (the others)."""

    command: str | None
    args: list[str] | None
    env: dict[str, str]
    url: str | None


class ModelSpec(TypedDict):
    """An agent host's scripted model: how to start it and where it journals."""

    command: str
    args: list[str]
    journal: str


class CellFile(TypedDict):
    """The cell file every adapter reads (``cell.json``, ``docs/adapters.md``: contract 1), with
    paths as the adapter sees them."""

    contract: int
    cell_id: str
    adapter: str
    variant: str
    options: dict[str, Any]
    case: str
    transport: Transport
    protocol: Protocol
    server: ServerSpec
    calls: list[ToolCall]
    followup: ToolCall
    call_timeout_ms: int
    budget_ms: int
    model: NotRequired[ModelSpec]


StepStatus = Literal["ok", "raised"]
CallStatus = Literal["returned", "raised"]


class ErrorInfo(TypedDict, total=False):
    """An Error of the observation contract: what a client raised or reported out of band."""

    type: str
    code: int | None
    message: str
    data: Any
    chain: list[ErrorInfo]
    sdk_code: str | None
    source: str | None


class Step(TypedDict, total=False):
    """``initialize``, ``list_tools`` or ``close``: a step of the session."""

    status: StepStatus
    error: ErrorInfo | None
    duration_ms: float
    protocol_version: str | None
    tools: list[str]


class PayloadReach(TypedDict):
    """How much of one long payload (a content block's text or data) reached the model."""

    block: int
    """The block's index in the result's ``content``."""
    type: str
    chars: int
    """The payload's length in characters (UTF-16 code units, as the host driver measures)."""
    head: int
    """How many of its first characters the model read in one piece."""
    tail: int
    """How many of its last characters the model read in one piece."""
    kept: int
    """How many of its characters the model read (head and tail, overlaps counted once)."""


class Reach(TypedDict):
    """An agent host's model view of a result whose payload is longer than the harness keeps whole."""

    payloads: list[PayloadReach]
    words: str
    """What the model read besides those payloads: the host's own words (at most 2,000 characters)."""


class ModelView(TypedDict, total=False):
    """For a framework's returned call: the tool output exactly as the model received it."""

    value: Any
    error_flag: bool | None
    error_flag_field: str | None
    message: Any
    reach: Reach | None
    """Agent hosts: how much of a long payload the model read (``clients/_support/host_measure.mjs``)."""
    output_schema_shown: bool | None
    """Agent hosts: whether the model was shown the tool's advertised outputSchema (null: nothing to show)."""


class Call(TypedDict, total=False):
    """One tool call (a case's call, or the follow-up) and its fate."""

    tool: str
    status: CallStatus
    result: Any
    error: ErrorInfo | None
    duration_ms: float
    cancelled_after_ms: float | None
    model_view: ModelView | None


class Observation(TypedDict, total=False):
    """What an adapter wrote: facts about what the client under test did (contract 1)."""

    contract: int
    package_version: str | None
    runtime_version: str | None
    initialize: Step
    list_tools: Step | None
    calls: list[Call]
    followup: Call | None
    transport_errors: list[ErrorInfo]
    close: Step | None


class JournalEvent(TypedDict, total=False):
    """One line of the reference server's journal (``servers/reference/journal.py``)."""

    event: str
    t: float
    bytes: int
    sha256: str
    write_ms: float
    method: str | None
    id: Any
    params: Any
    message: Any
    reason: str
    producer_stopped: bool
    http: dict[str, Any]
    error: str
    line: str
    protocol: str | None


class ProcessFacts(TypedDict):
    """How the adapter process (or container) ended."""

    exit_code: int | None
    timed_out: bool
    wall_ms: float
    stragglers_killed: int
    stdout_bytes: int
    stderr_bytes: int


class CellInputs(TypedDict):
    """What decided a cell's outcome, hashed (:mod:`harness.run.inputs`): the digest of the named parts."""

    digest: str
    parts: dict[str, str]


class CellRecord(TypedDict):
    """One line of ``cells.jsonl``: everything known about a finished cell, facts only."""

    key: str
    column: str
    adapter: str
    kind: str
    variant: str
    case: str
    family: str
    schema: str
    transport: str
    protocol: NotRequired[str]
    """The revision the server spoke and the client was asked for (absent in runs before the axis:
    ``2025-11-25``)."""
    budget_ms: int
    harness_error: str | None
    process: ProcessFacts | None
    observation: Observation | None
    journal: list[JournalEvent]
    finished_at: str
    """When the cell actually ran (for a reused cell: in the run it was reused from)."""
    inputs: NotRequired[CellInputs | None]
    """The cell's inputs (absent in runs before reuse; None for a live cell, never reused)."""
    reused_from: NotRequired[str]
    """A reused cell: the run it ran in, whose record and evidence this one is (:mod:`harness.run.reuse`)."""


class VariantMeta(TypedDict):
    column: str
    description: str
    options: dict[str, str | int | float | bool]


class AdapterMeta(TypedDict, total=False):
    """One adapter's entry in the run metadata; the version keys come from the backend."""

    title: str
    kind: str
    runtime: str
    package: str | None
    runtime_version: str | None
    package_version: str | None
    image: str
    image_id: str
    base_image: str
    node_release: str | None
    isolation: str
    """How the adapter's cells ran: ``worker`` (forked from a warm worker), ``process (why)``, ``container``."""
    protocols: list[str]
    """The revisions the adapter can be asked for (its manifest's ``protocols``)."""
    variants: dict[str, VariantMeta]


class SelectionSettings(TypedDict):
    """The cell filters a run was started with (:meth:`harness.matrix.cells.Selection.settings`)."""

    adapters: list[str]
    cases: list[str]
    families: list[str]
    transports: list[str]
    protocols: NotRequired[list[str]]
    """The ``--protocol`` selection (absent in runs before the protocol axis)."""
    shard: list[int]


class RunSettings(SelectionSettings):
    """The selection and options a run was started with (``--resume`` reuses them)."""

    jobs: int
    wait_jobs: int
    """How many cells that mostly wait ran at once beside the ``jobs`` others."""
    backend: str
    case_files: NotRequired[list[str]]
    """The names of the recorded cases a run replays (``--case-file``; kept in ``case-files/``)."""
    live: NotRequired[dict[str, Any] | None]
    """Live mode: the user's server (command, cwd, names of its environment variables)."""
    kind: str | None
    cells: int
    budget_scale: float
    isolation: str
    """``worker`` or ``process`` (local backend, ``--isolation``), ``container`` (docker)."""
    fresh: NotRequired[bool]
    """``--fresh``: every cell ran, none was reused from an earlier run."""
    shard_costs: NotRequired[str | None]
    """How ``--shard`` split the cells: ``count``, or by the wall times of the cells of earlier runs
    (the newest run that had them; ``harness/run/shards.py``)."""


class ReuseMeta(TypedDict):
    """What a run's reuse passed over: earlier runs not used at all, single cells not taken, and why."""

    skipped_runs: dict[str, str]
    skipped_cells: dict[str, str]
    """``RUN/KEY`` -> why that cell's evidence could not be taken (it ran again)."""


class RunMeta(TypedDict, total=False):
    """``meta.json`` of a run: what ran, where, with which versions."""

    run_id: str
    started: str
    finished: str | None
    resumed: list[str]
    harness_version: str
    harness_commit: str
    backend: str
    os: str
    machine: dict[str, Any]
    python: str
    node: str | None
    toolchains: dict[str, str]
    """The compiled adapters' build tools found on the host and their versions (``go``, ``rustc``,
    ``cargo``, ``java``, ``mvn``; :mod:`harness.prepare.toolchains`)."""
    settings: RunSettings
    reference_server: str
    """How HTTP cells' reference servers started: ``worker`` (forked from a warm worker, the
    default), ``process (why)``, ``container`` (absent in runs before warm servers)."""
    adapters: dict[str, AdapterMeta]
    prepare_failures: dict[str, str]
    merged_from: list[str]
    reuse: ReuseMeta
    """Which earlier runs were not reused from, and why (:mod:`harness.run.reuse`)."""
    """A merged run (``harness/publish/merge.py``): the shard runs it was made of, in shard order."""
