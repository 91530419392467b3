"""The byte-exact boundary probe (:mod:`.boundary`): the largest result frame each column accepts,
found by a search of a handful of probe cells per column and payload kind; ``python -m harness
probe`` (:mod:`.command`).

Contract: each entry of ``boundary.json`` comes with its probes' evidence; a search whose inputs
are unchanged takes its earlier entry, marked as reused.
"""
