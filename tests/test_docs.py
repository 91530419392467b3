"""Documents generated from code stay equal to the code."""

from harness import catalog_doc

from .conftest import REPO


def test_fault_catalog_doc_is_current():
    on_disk = (REPO / "docs" / "fault-catalog.md").read_text()
    assert on_disk == catalog_doc.markdown(), "regenerate: python -m harness catalog > docs/fault-catalog.md"
