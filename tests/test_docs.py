"""Documents generated from code stay equal to the code, and the examples they show to what they use."""

import re

import yaml

from harness.matrix import catalog_doc

from .conftest import REPO


def test_fault_catalog_doc_is_current():
    on_disk = (REPO / "docs" / "fault-catalog.md").read_text()
    assert on_disk == catalog_doc.markdown(), "regenerate: python -m harness catalog > docs/fault-catalog.md"


def test_the_ci_workflow_example_runs_every_shard_merges_them_and_publishes():
    workflow = yaml.safe_load((REPO / "docs" / "examples" / "github-actions-matrix.yml").read_text())
    shards = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, int(workflow["env"]["SHARDS"]) + 1))
    steps = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    merge = next(step for step in steps if "nox -s merge" in step)
    assert re.findall(r"shard-(\d+)", merge) == [str(k) for k in shards], "every shard merged"
    sessions = {re.search(r"nox -s ([\w-]+)", step).group(1) for step in steps if "nox -s" in step}
    defined = set(re.findall(r"^def ([\w]+)\(session", (REPO / "noxfile.py").read_text(), re.M))
    assert sessions == {"prepare", "matrix", "merge", "publish"} and sessions <= defined
