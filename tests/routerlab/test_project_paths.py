"""The notebook finds the project's results from wherever its kernel starts, and never creates a store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from routerlab.agents.errors import ConfigError
from routerlab.app.demo import make_demo_session
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.store import ResultsStore
from routerlab.project import candidates, locate


def demo_project(tmp_path_factory) -> tuple[Path, str]:
    """A project folder laid out as `routerlab run` leaves it, with a real recorded session (and its id)."""
    demo_dir = tmp_path_factory.getbasetemp() / "routerlab-demo"
    store, tracking, session = make_demo_session(demo_dir)
    root = tmp_path_factory.mktemp("project")
    (root / ".routerlab").mkdir()
    (root / "notebooks").mkdir()
    shutil.copy(store, root / ".routerlab" / "results.duckdb")
    db = Path(tracking.removeprefix("sqlite:///"))
    shutil.copy(db, root / "mlflow.db")
    # artifacts live beside the tracking database (mlflow-artifacts:/ resolved there), so a
    # project copy carries them as a user's copied folder would
    if (db.parent / "mlartifacts").is_dir():
        shutil.copytree(db.parent / "mlartifacts", root / "mlartifacts")
    return root, session


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> tuple[Path, str]:
    """A project folder laid out as `routerlab run` leaves it, with a real recorded session."""
    return demo_project(tmp_path_factory)


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_relative_paths_resolve_to_the_project_from_a_subfolder(project) -> None:
    root, session = project
    store, uri = locate(".routerlab/results.duckdb", "sqlite:///mlflow.db", start=root / "notebooks")
    assert Path(store) == root / ".routerlab" / "results.duckdb"
    assert uri == f"sqlite:///{root / 'mlflow.db'}"
    # and the session is there, read as the notebook reads it
    assert len(build_comparison(ResultsStore(store, read_only=True), session).parts[0].routers) == 3
    # a tracking server or no MLflow at all pass through unchanged
    assert locate(".routerlab/results.duckdb", None, start=root)[1] is None
    assert locate(".routerlab/results.duckdb", "http://127.0.0.1:5000", start=root)[1] == "http://127.0.0.1:5000"


def test_the_installed_checkout_is_a_last_resort() -> None:
    checkout = Path(__file__).resolve().parents[2]
    assert candidates(Path("/"))[-1] == checkout


def test_nothing_found_is_an_error_and_creates_nothing(project, tmp_path) -> None:
    root, session = project
    before = _files(root) | _files(tmp_path)
    with pytest.raises(ConfigError) as err:
        locate(".routerlab/nothing-here.duckdb", None, start=tmp_path)
    assert "looked at" in str(err.value.found) and err.value.fix
    with pytest.raises(ConfigError):
        locate(".routerlab/results.duckdb", "sqlite:///no-mlflow-here.db", start=root / "notebooks")
    # a store path that does not exist, and a session that does not: errors, no new file anywhere
    with pytest.raises(ConfigError):
        build_comparison(ResultsStore(tmp_path / "missing.duckdb", read_only=True), session)
    with pytest.raises(ConfigError, match="no session"):
        build_comparison(ResultsStore(root / ".routerlab" / "results.duckdb", read_only=True), "20990101-000000-0000")
    assert _files(root) | _files(tmp_path) == before
