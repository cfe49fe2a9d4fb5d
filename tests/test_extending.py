"""docs/extending.md stays true: each example there registers, builds and works as documented."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from routerlab.agents.errors import ContractError
from routerlab.agents.registry import Registry, component_spec
from routerlab.agents.state import initial_state
from routerlab.agents.trace import Trace
from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.eval.scoring import scorer
from routerlab.routers import router

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"


def _blocks() -> dict[str, str]:
    """Python blocks of the page, keyed by the file named in their first comment line."""
    found = re.findall(r"```python\n# (\S+)\n(.*?)```", DOC.read_text(), re.S)
    return {name: code for name, code in found}


@pytest.fixture
def registries():
    """Registrations made by a test are undone afterwards (no global state leaks)."""
    saved = {reg: dict(reg._factories) for reg in (router, scorer, dataset)}
    yield
    for reg, factories in saved.items():
        reg._factories.clear()
        reg._factories.update(factories)


def _run(name: str) -> dict:
    namespace: dict = {"__name__": f"docs_example_{Path(name).stem}"}
    exec(compile(_blocks()[name], name, "exec"), namespace)
    return namespace


#: each kind's example: the component's file, its test file, and the conformance suite it joins
EXAMPLES: dict[str, tuple[str, str, str, str]] = {
    "router": ("routers/keyword.py", "tests/routers/test_keyword.py", "tests/routers/test_conformance.py", "keyword"),
    "scorer": (
        "eval/scorers/steps.py",
        "tests/eval/test_steps.py",
        "tests/eval/test_scorer_conformance.py",
        "few_steps",
    ),
    "loader": (
        "benchmarks/loaders/pairs.py",
        "tests/benchmarks/loaders/test_pairs.py",
        "tests/benchmarks/loaders/test_loader_conformance.py",
        "pairs",
    ),
}


def test_page_has_one_example_and_one_test_per_kind():
    assert set(_blocks()) == {name for component, test, _, _ in EXAMPLES.values() for name in (component, test)}


def test_router_example(registries):
    _run("routers/keyword.py")
    built = router.build("keyword", word="describe")
    assert component_spec(built) == {"kind": "router", "name": "keyword", "args": {"word": "describe", "fix_budget": 1}}
    assert built.classify(initial_state("Describe this query: SELECT 1", "db.duckdb")).intent == "explain"
    assert built.classify(initial_state("How many rows?", "db.duckdb")).intent == "sql"


def test_scorer_example(registries):
    _run("eval/scorers/steps.py")
    few = scorer.build("few_steps", max_calls=1)
    trace = Trace(example_id="x", tool_calls=[{"name": "chat", "status": "success"}])
    assert few.score(None, trace).value == 1.0
    assert scorer.build("few_steps", max_calls=0).score(None, trace).value == 0.0


def test_loader_example(registries, tmp_path):
    _run("benchmarks/loaders/pairs.py")
    data = tmp_path / "q.tsv"
    data.write_text("How many areas?\tSELECT count(*) FROM areas\nName them\tSELECT name FROM areas\n")
    loaded = dataset.build("pairs", path=str(data), db="sales.duckdb")
    assert isinstance(loaded, Dataset)
    assert [e.gold_sql for e in loaded.examples] == ["SELECT count(*) FROM areas", "SELECT name FROM areas"]


def test_registry_checks_what_a_factory_builds():
    things: Registry[Dataset] = Registry("dataset", returns=Dataset)
    things("broken")(lambda: "not a dataset")
    with pytest.raises(ContractError, match="built the wrong kind of object") as err:
        things.build("broken")
    assert err.value.expected == "an instance of Dataset" and err.value.found == "str"


def _installed_copy(root: Path) -> Path:
    """A copy of the project at ``root/repo`` and its import layout at ``root/site``.

    ``routerlab.agents`` and the other layers are installed from folders beside the application
    package (pyproject's ``package-dir``); ``root/site/routerlab`` rebuilds that layout from links
    into the copy, so ``PYTHONPATH=root/site`` imports the copy, not this checkout.
    """
    repo = root / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".venv", ".git", ".routerlab", "*.egg-info")
    for name in ("agents", "routers", "benchmarks", "eval", "routerlab", "tests", "docs", "notebooks"):
        shutil.copytree(ROOT / name, repo / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    site = root / "site" / "routerlab"
    site.mkdir(parents=True)
    for entry in (repo / "routerlab").iterdir():
        (site / entry.name).symlink_to(entry)
    for layer in ("agents", "routers", "benchmarks", "eval"):
        (site / layer).symlink_to(repo / layer)
    return repo


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_an_example_is_one_file_plus_its_test(kind, tmp_path):
    """Adding exactly the page's two files to a copy of the project passes the layer test, the kind's
    conformance suite (which picks the new component up by itself) and the new test."""
    component, test, suite, name = EXAMPLES[kind]
    repo = _installed_copy(tmp_path)
    before = {p.relative_to(repo) for p in repo.rglob("*") if p.is_file()}
    blocks = _blocks()
    for rel in (component, test):
        (repo / rel).write_text(blocks[rel])
    after = {p.relative_to(repo) for p in repo.rglob("*") if p.is_file()}
    assert after - before == {Path(component), Path(test)}
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "ROUTERLAB_CACHE": str(tmp_path / "cache")}
    args = ["-q", "-p", "no:cacheprovider", "-x", "-m", "not model", "tests/test_layers.py", suite, test]
    args += ["-k", f"test_layers or {name} or {Path(test).stem}"]
    # this checkout is installed in editable mode, and setuptools' editable finder would import
    # it instead of the copy: drop that finder so PYTHONPATH decides
    boot = (
        "import sys, pytest; "
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '')]; "
        # the copy's own routerlab/ folder (the application alone) must not shadow the layout
        f"sys.path.insert(0, {str(tmp_path / 'site')!r}); "
        "import routerlab.agents, routerlab.routers, routerlab.eval.scorers, routerlab.benchmarks.loaders; "
        f"assert routerlab.agents.__file__.startswith({str(tmp_path)!r}), routerlab.agents.__file__; "
        f"sys.exit(pytest.main({args!r}))"
    )
    done = subprocess.run([sys.executable, "-c", boot], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\d+ passed", done.stdout), done.stdout[-2000:]


def test_a_custom_scorer_reaches_the_table_compare_and_mlflow(registries, tmp_path):
    """``routerlab run --scorer ex,few_steps`` as the page says: its column in every view of the run."""
    import mlflow
    from typer.testing import CliRunner

    from routerlab.cli import app

    _run("eval/scorers/steps.py")
    store, tracking = str(tmp_path / "r.duckdb"), f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["run", "--router", "rules", "--scorer", "ex,few_steps", "--lm", "scripted:basic", "--limit", "3"]
    result = CliRunner().invoke(app, [*args, "--store", store, "--tracking-uri", tracking])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "┃ router" in line)
    assert "few_steps" in header, result.output
    session = re.search(r"session id: (\S+)", result.output).group(1)  # type: ignore[union-attr]
    shown = CliRunner().invoke(app, ["compare", session, "--store", store, "--format", "markdown"])
    table_header = next(line for line in shown.output.splitlines() if line.startswith("| router |"))
    assert shown.exit_code == 0 and "few_steps" in table_header, shown.output
    client = mlflow.MlflowClient(tracking)
    runs = client.search_runs(
        [e.experiment_id for e in client.search_experiments()], f"tags.`routerlab.run_key` = '{session}.rules'"
    )
    assert runs, "the router's MLflow run"
    metrics = runs[0].data.metrics
    assert 0.0 <= metrics["few_steps"] <= 1.0 and metrics["few_steps_n"] == 3.0
