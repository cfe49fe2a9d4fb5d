"""notebooks/router_comparison.ipynb: committed without outputs, runs top to bottom in a kernel."""

from __future__ import annotations

import ast
import copy
import importlib.metadata
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from routerlab.app.demo import make_demo_session

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "router_comparison.ipynb"

#: what the committed parameters cell must define, with its default values
PARAMETERS = {
    "SESSION": None,
    "STORE": ".routerlab/results.duckdb",
    "TRACKING_URI": "sqlite:///mlflow.db",
    "SMALL_RUN_DIR": None,
}
#: probe appended to the executed copy: which interpreter the kernel runs
_PROBE = "import sys\nprint(sys.prefix)\nprint(sys.executable)"


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def test_committed_notebook_has_no_outputs_and_a_parameters_cell():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)
    first = nb.cells[0]
    assert first.cell_type == "code" and "parameters" in first.metadata.get("tags", [])
    assigned = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in ast.parse(first.source).body
        if isinstance(node, ast.Assign)
    }
    assert assigned == PARAMETERS
    assert nb.metadata["kernelspec"]["name"] == "python3"
    # the cells only display: after the set-up, each is one call of the report's view on the model
    shown = [c.source for c in code[2:] if "optional-section" not in c.metadata.get("tags", [])]
    assert shown and all(ast.unparse(ast.parse(src)).startswith("view.show_") for src in shown), shown
    assert all(len(ast.parse(src).body) == 1 and src.endswith("(model)") for src in shown), shown


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    # the same directory as tests/eval/test_analysis.py: a run of both builds the demo once
    demo_dir = tmp_path_factory.getbasetemp() / "routerlab-demo"
    _, _, session = make_demo_session(demo_dir)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    run = copy.deepcopy(nb)
    # papermill's convention: an injected cell right after the parameters cell overrides them
    injected = nbformat.v4.new_code_cell(
        f"SMALL_RUN_DIR = {str(demo_dir)!r}", metadata={"tags": ["injected-parameters"]}
    )
    at = next(i for i, c in enumerate(run.cells) if "parameters" in c.metadata.get("tags", []))
    run.cells.insert(at + 1, injected)
    run.cells.append(nbformat.v4.new_code_cell(_PROBE))
    workdir = tmp_path_factory.mktemp("notebook-cwd")
    env = {**os.environ, "MPLBACKEND": "Agg"}
    client = NotebookClient(run, kernel_name="python3", timeout=900, resources={"metadata": {"path": str(workdir)}})
    client.execute(env=env)
    return run, session, workdir


def test_notebook_runs_top_to_bottom(executed):
    run, session, workdir = executed
    code = [c for c in run.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert errors == []
    # the kernel is this interpreter (the venv), not whatever `python` is on PATH
    probe = _text(code[-1]).split()
    assert probe == [sys.prefix, sys.executable]
    # the demo branch ran and reused the session built above
    assert f"session {session}" in _text(code[2])
    images = sum(1 for c in code for o in c.outputs if "image/png" in o.get("data", {}))
    assert images >= 2  # the part's rates with intervals and its confusion matrices
    assert not (workdir / ".routerlab").exists()  # the demo went to SMALL_RUN_DIR, not the cwd


def test_the_report_shows_the_models_verdict_part_by_part(executed):
    """The verdict the notebook displays is the model's, word for word; each part has its heading."""
    from routerlab.app.loaded import load
    from routerlab.eval.analysis.markdown import part_heading, verdict_md

    run, session, _ = executed
    shown = "".join(o.get("data", {}).get("text/markdown", "") for c in run.cells for o in c.get("outputs", []))
    store = next(c for c in run.cells if "make_demo_session" in c.source)
    path = _text(store).split("store ")[1].split()[0]
    model = load(session, store=path).comparison
    assert verdict_md(model) in shown
    for part in model.parts:
        assert part_heading(part) in shown
    assert "n/a" not in shown and not re.search(r"\bnan\b", shown, re.IGNORECASE)


@pytest.mark.parametrize(("command", "module"), [("lab", "jupyterlab"), ("nbconvert", "nbconvert")])
def test_jupyter_front_end_is_installed(command, module):
    # the README opens the notebook with `.venv/bin/jupyter lab notebooks/`; `routerlab report` renders with nbconvert
    jupyter = Path(sys.executable).parent / "jupyter"
    done = subprocess.run([str(jupyter), command, "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == importlib.metadata.version(module)


@pytest.mark.server
def test_jupyter_lab_serves_the_notebook(tmp_path):
    # what the README's `.venv/bin/jupyter lab notebooks/` gives: a server that opens the notebook
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "routerlab-test"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    args = ["lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1", f"--IdentityProvider.token={token}"]
    # Jupyter refuses to run as root without it (CI containers run as root)
    args += ["--allow-root"] if os.geteuid() == 0 else []
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter"), *args, str(NOTEBOOK.parent)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    base, headers = f"http://127.0.0.1:{port}", {"Authorization": f"token {token}"}
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                request = urllib.request.Request(f"{base}/api/status", headers=headers)
                status = urllib.request.urlopen(request, timeout=5)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "jupyter lab did not start"
                time.sleep(0.5)
        assert status.status == 200
        url = f"{base}/api/contents/{NOTEBOOK.name}"
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as reply:
            model = json.load(reply)
        assert model["type"] == "notebook"
        assert "parameters" in model["content"]["cells"][0]["metadata"]["tags"]
        with urllib.request.urlopen(urllib.request.Request(f"{base}/lab", headers=headers), timeout=30) as page:
            assert page.status == 200 and "JupyterLab" in page.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_notebook_opened_from_notebooks_folder_finds_the_project_store(tmp_path_factory):
    """`jupyter lab notebooks/` starts the kernel in notebooks/: only SESSION is set, as the README says."""
    from tests.routerlab.test_project_paths import demo_project

    root, session = demo_project(tmp_path_factory)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # the cells that use the paths: parameters, setup (which loads the session)
    used = ("make_demo_session", "routerlab.load")
    run = copy.deepcopy(nb)
    run.cells = [run.cells[0], *(c for c in run.cells[1:] if any(u in c.source for u in used))]
    run.cells.insert(1, nbformat.v4.new_code_cell(f"SESSION = {session!r}", metadata={"tags": ["injected-parameters"]}))
    client = NotebookClient(
        run, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(root / "notebooks")}}
    )
    client.execute(env={**os.environ, "MPLBACKEND": "Agg"})
    printed = "".join(_text(c) for c in run.cells)
    assert f"store {root / '.routerlab' / 'results.duckdb'}" in printed
    assert f"tracking sqlite:///{root / 'mlflow.db'}" in printed
    assert list((root / "notebooks").iterdir()) == []  # no empty store or MLflow database created there


def test_the_demo_says_demo_in_its_title(executed):
    run, _, _ = executed
    setup = [c for c in run.cells if c.cell_type == "code"][2]
    shown = "".join(o.get("data", {}).get("text/markdown", "") for o in setup.outputs)
    assert shown.startswith("# DEMO: a scripted demo session, not your results")
    assert _text(setup).startswith("DEMO session ")


@pytest.mark.parametrize("variable", ["ROUTERLAB_SESSION", "SESSION"])
def test_a_session_named_by_environment_is_used_and_an_unknown_one_is_an_error(tmp_path_factory, variable):
    """`ROUTERLAB_SESSION=<id> jupyter nbconvert --execute`: that session, never a silent demo."""
    from nbclient.exceptions import CellExecutionError

    demo_dir = tmp_path_factory.getbasetemp() / "routerlab-demo"
    store, tracking, session = make_demo_session(demo_dir)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    setup = [c for c in nb.cells if "make_demo_session" in c.source]
    workdir = tmp_path_factory.mktemp("env-session")
    env = {**os.environ, "MPLBACKEND": "Agg", "ROUTERLAB_STORE": str(store), "ROUTERLAB_TRACKING_URI": tracking}
    env.pop("ROUTERLAB_SESSION", None)
    env.pop("SESSION", None)

    def run(session_id: str) -> nbformat.NotebookNode:
        copy_ = copy.deepcopy(nb)
        copy_.cells = [copy_.cells[0], *copy.deepcopy(setup)]
        client = NotebookClient(
            copy_, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(workdir)}}
        )
        client.execute(env={**env, variable: session_id})
        return copy_

    named = run(session)
    printed = _text(named.cells[1])
    assert printed.startswith(f"session {session}\nstore {store}") and "DEMO" not in printed
    with pytest.raises(CellExecutionError) as failed:
        run("20990101-000000-nope")
    assert "no session '20990101-000000-nope'" in str(failed.value)
