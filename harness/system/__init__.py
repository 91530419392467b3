"""The processes the harness starts, at the operating system's level: a bounded process group
(:mod:`.process`), warm workers that fork a fresh child per cell (:mod:`.workers`), a loopback-only
network namespace (:mod:`.loopback`), the reference server's start and ready line
(:mod:`.reference_server`).

Contract: every process started here is bounded in time and reaped with its whole group; nothing
here knows of cases, cells or adapters, and nothing of the harness is imported but
:mod:`harness.errors` and :mod:`harness.layout`.
"""
