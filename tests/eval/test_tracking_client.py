"""Opening an MLflow store: the artifact registry is patched by ``store_client``, never by an import.

Each check that looks at MLflow's process-wide artifact registry runs in a fresh interpreter, so
what an earlier test registered cannot make it pass.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from routerlab.agents.errors import ConfigError
from routerlab.eval.tracking import MlflowSink, store_client
from routerlab.eval.tracking.layout import FINAL_STATUSES, check_status, search_literal
from routerlab.eval.tracking.provenance import routerlab_version

pytestmark = pytest.mark.timeout(600)

_REGISTERED = textwrap.dedent(
    """
    from mlflow.store.artifact.artifact_repository_registry import _artifact_repository_registry

    def registered():
        repo = _artifact_repository_registry.get_registered_artifact_repositories()["mlflow-artifacts"]
        return f"{repo.__module__}.{repo.__name__}"
    """
)


def _run(code: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _REGISTERED + textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_importing_the_tracking_package_leaves_mlflow_alone(tmp_path: Path) -> None:
    """Import, then open a store twice: the patch appears at the first open and stays (idempotent)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    before, after, again = _run(
        f"""
        import routerlab.eval.tracking
        print(registered())
        from routerlab.eval.tracking import store_client
        store_client({uri!r})
        print(registered())
        store_client({uri!r})
        print(registered())
        """
    )
    assert not before.startswith("routerlab."), before
    assert after == again == "routerlab.eval.tracking.artifacts._repository"


def test_a_process_that_only_reads_finds_artifacts_beside_a_copied_store(tmp_path: Path) -> None:
    """Written by the sink, the store folder moved, then read in a fresh process through ``store_client``."""
    first = tmp_path / "first"
    first.mkdir()
    uri = f"sqlite:///{first / 'mlflow.db'}"
    with MlflowSink(uri, traces=False) as sink:
        run_id = sink.start_parent("comparison", dataset="demo")
        sink.finish_parent(run_id, texts={"verdict.md": "rules wins"})
    assert store_client(uri).get_run(run_id).info.artifact_uri.startswith("mlflow-artifacts:/")
    moved = tmp_path / "moved"
    first.rename(moved)
    out = tmp_path / "out"
    (text,) = _run(
        f"""
        from pathlib import Path
        from routerlab.eval.tracking import store_client
        client = store_client({f"sqlite:///{moved / 'mlflow.db'}"!r})
        print(Path(client.download_artifacts({run_id!r}, "verdict.md", {str(out)!r})).read_text().replace(" ", "_"))
        """
    )
    assert text == "rules_wins"


def test_the_layout_helpers_the_sink_and_reader_share_are_public() -> None:
    for status in FINAL_STATUSES:
        check_status(status)
    with pytest.raises(ConfigError, match="unknown final run status"):
        check_status("DONE")
    assert search_literal("s1.rules") == "'s1.rules'"
    with pytest.raises(ConfigError, match="single quote"):
        search_literal("it's")
    assert routerlab_version() == "0.1.0"  # the editable install of this checkout (pyproject.toml)
