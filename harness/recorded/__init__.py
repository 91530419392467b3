"""A user's own server: one tool recorded into a case file (:mod:`.record`), case files read back
as cases of the matrix (:mod:`.case_files`), and live mode, where a case's cells run against the
server itself through a recording pipe or proxy (:mod:`.live`).

Contract: a recorded case is a case like the catalog's once read; bad input (a file, a command,
a URL) is one :class:`harness.errors.UsageError` naming it.
"""
