"""Errors the command line reports as one line (``error: ...``) and exit code 2, never a traceback.

Each names the file, field or value at fault. Modules raise the error of their own concern
(:class:`harness.matrix.manifest.ManifestError`, ...); the ones here are for bad input that belongs to
no single module, and :class:`PrepareError`, which every stage that builds or starts an adapter's
environment raises.
"""

from __future__ import annotations

from pathlib import Path


class UsageError(ValueError):
    """A flag, name or value the user gave is wrong (an unknown case, an empty selection, a bad run id)."""


class PrepareError(RuntimeError):
    """An adapter's environment or image could not be built or found; the message names the adapter
    and the command (or what to run)."""


class NoSuchRun(UsageError):
    """A run id that names no run under ``results/`` (one message for every command)."""


def read_text(path: Path, where: str) -> str:
    """A file the user named, as UTF-8 text; a :class:`UsageError` saying ``where`` it was named otherwise."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{where}: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{where}: {path} is not UTF-8") from None
