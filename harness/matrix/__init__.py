"""What the matrix is, decided without running anything: the fault catalog (:mod:`.catalog`, its
document :mod:`.catalog_doc`), the adapters' manifests (:mod:`.manifest`), other package versions
as columns of their own (:mod:`.versions`), and the cells they make (:mod:`.cells`: one column x
case x schema mode x transport x protocol revision, and the cell file each adapter reads).

Contract: pure data and validation; reads the checkout, starts no process.
"""
