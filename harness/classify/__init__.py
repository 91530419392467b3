"""From stored evidence to outcomes: one classified row per cell with pandas (:mod:`.outcomes`),
what a client returned against what the server sent (:mod:`.compare`), what a framework's or host's
model read (:mod:`.model_input`), and the client-free checks of a recorded result
(:mod:`.result_checks`).

Contract: pure functions of records and case files, so a stored cell is classified again with
today's rules whenever it is read; nothing here runs a process or writes a file.
"""
