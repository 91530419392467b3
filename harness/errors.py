"""Errors the command line reports as one line (``error: ...``) and exit code 2, never a traceback.

Each names the file, field or value at fault. Modules raise the error of their own concern
(:class:`harness.manifest.ManifestError`, :class:`harness.backends.PrepareError`, ...); the ones
here are for bad input that belongs to no single module.
"""

from __future__ import annotations


class UsageError(ValueError):
    """A flag, name or value the user gave is wrong (an unknown case, an empty selection, a bad run id)."""


class NoSuchRun(UsageError):
    """A run id that names no run under ``results/`` (one message for every command)."""
