"""Across runs: the published site with history (:mod:`.site`), what changed from one run to the
next (:mod:`.changes`), expected-outcome baselines for CI (:mod:`.baselines`), shard runs merged
into one (:mod:`.merge`), and two runs compared cell by cell (:mod:`.diff`).

Contract: a reused cell counts as the cell it is; a published run keeps all the evidence its pages
link to.
"""
