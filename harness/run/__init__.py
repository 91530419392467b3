"""A run: its adapters and cells planned and the run directory made or resumed (:mod:`.runs`); each
cell's inputs hashed (:mod:`.inputs`) and reused from an earlier run (:mod:`.reuse`) or run
(:mod:`.runner`) on a backend (:mod:`.backends`) within the CPU slots (:mod:`.cpu_slots`); the
adapter's observation read (:mod:`.observation`) and every record stored as it finishes
(:mod:`.store`, with the run's metadata :mod:`.meta`); shards by cost (:mod:`.shards`); the progress
line (:mod:`.progress`, fed by :mod:`.outcome_feed`).

Contract: one bad cell or adapter never stops the rest; a killed run resumes exactly; every record
is the stored result of a real run of a real client.
"""
