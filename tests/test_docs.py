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


def test_every_harness_path_the_docs_name_exists():
    named = {
        (doc.name, match.rstrip(".,:;)"))
        for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
        for match in re.findall(r"harness/[\w./-]+", doc.read_text())
    }
    missing = sorted((doc, path) for doc, path in named if not (REPO / path.split("::")[0]).exists())
    assert missing == [], "docs name harness paths that are not in the tree"


def test_the_architecture_tree_names_every_harness_module_in_its_subpackage_row():
    rows = [
        line for line in (REPO / "docs" / "architecture.md").read_text().splitlines() if line.startswith("| `harness/")
    ]
    unnamed = []
    for module in sorted((REPO / "harness").rglob("*.py")):
        relative = module.relative_to(REPO / "harness")
        if relative.name == "__init__.py" and len(relative.parts) == 1:
            continue
        if len(relative.parts) == 1:  # a top-level module: named by its path in some row
            if not any(f"`harness/{relative}`" in row for row in rows):
                unnamed.append(str(relative))
            continue
        row = next((r for r in rows if r.startswith(f"| `harness/{relative.parts[0]}/`")), None)
        if row is None or (relative.name != "__init__.py" and f"`{relative.name}`" not in row):
            unnamed.append(str(relative))
    assert unnamed == [], "docs/architecture.md's folder tree does not name these modules"
