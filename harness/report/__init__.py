"""The static pages of one run (:mod:`.pages`): the SDK matrix, the model view, each cell's evidence,
the "your server" page of a recorded case (:mod:`.recorded_case`), a version sweep's "changed in"
page (:mod:`.sweep`), the overview charts (:mod:`.overview`), with how values look decided in
:mod:`.formatting`; jinja2 templates under ``templates/``.

Contract: everything that came from a server or client is escaped; the pages work from
``file://`` and any static host, with no network.
"""
