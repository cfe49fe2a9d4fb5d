"""``routerlab report``: run the comparison notebook for one session and write one shareable HTML file.

The notebook (``notebooks/router_comparison.ipynb``) is executed in a fresh kernel with its
parameters injected after the cell tagged ``parameters`` (papermill's convention: a cell tagged
``injected-parameters`` overrides the defaults, so nobody edits the notebook). The executed
notebook is rendered with nbconvert into a single HTML file: figures are embedded as PNG data
URIs and the page loads no script, style or font from the network, so it opens offline and can
be mailed as it is. Code cells are left out unless asked for.

Everything that can be checked before a kernel starts is (the store exists, the session is in
it, its MLflow store exists), so bad input fails in a second with the known sessions listed; a
cell that fails later is named by number and section with its error.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from routerlab.agents.errors import ConfigError, RunError
from routerlab.eval.defaults import DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI
from routerlab.eval.store import ResultsStore, session_of

__all__ = ["NOTEBOOK", "ReportCellError", "ReportResult", "make_report"]

#: the analysis notebook the report executes
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "router_comparison.ipynb"

#: seconds one cell may run before the report gives up on it
CELL_TIMEOUT_S = 600

#: the lab template without its network loads (require.js, MathJax and Mermaid from a CDN):
#: the notebook has no widgets, formulas or diagrams, and a shared report must open offline
_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block notebook_css -%}
{{ super() }}
<style>
/* every table fits a 900 px window: cells wrap, and a table still too wide scrolls inside itself */
.jp-RenderedHTMLCommon table { display: block; max-width: 100%; overflow-x: auto; }
/* a header breaks between words, never inside one ("hybri d"); a long cell (a question, SQL) wraps */
.jp-RenderedHTMLCommon th { white-space: nowrap; }
.jp-RenderedHTMLCommon td { white-space: normal; overflow-wrap: break-word; min-width: 4em; }
/* a figure (right-aligned: a rate with its interval, a count) is never broken across lines */
.jp-RenderedHTMLCommon td[style*="right"] { white-space: nowrap; }
.jp-OutputArea-output pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.jp-RenderedImage img { max-width: 100%; height: auto; }
</style>
{%- endblock notebook_css -%}
"""
_TEMPLATE_NAME = "routerlab_report.html.j2"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ReportCellError(RunError):
    """A notebook cell failed (or timed out, or killed its kernel) while the report ran."""

    error_class = "report_cell_error"


@dataclass(frozen=True)
class ReportResult:
    """What :func:`make_report` wrote.

    Attributes:
        out: The HTML file.
        session: The session reported on.
        tracking_uri: The MLflow store the session was logged to, named in the page's header (None: not logged).
        code_cells: Code cells executed.
        images: Figures embedded in the page.
        bytes: Size of the HTML file.
        seconds: Wall time from the first check to the written file.
    """

    out: Path
    session: str
    tracking_uri: str | None
    code_cells: int
    images: int
    bytes: int
    seconds: float


def _session_runs(store: Path, session: str) -> list[dict[str, Any]]:
    """The store's runs of ``session``, after checking the store exists and holds it."""
    if not store.is_file():
        raise ConfigError(
            f"no results store at {store}",
            expected=f"the DuckDB file `routerlab run` wrote (default {DEFAULT_STORE_PATH})",
            found="no such file" if not store.exists() else "a directory",
            fix="pass --store PATH (as given to `routerlab run --store`), or run `routerlab run` first",
        )
    try:
        runs = ResultsStore(store).runs()
    except Exception as exc:  # duckdb raises its own types for a file that is not a store
        raise ConfigError(
            f"cannot read the results store {store}",
            expected="a DuckDB results store written by `routerlab run`",
            found=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            fix="pass the --store file `routerlab run` wrote",
        ) from exc
    sessions = list(dict.fromkeys(session_of(str(rid)) for rid in runs["run_id"]))
    mine = [row for row in runs.to_dict("records") if session_of(str(row["run_id"])) == session]
    if not mine:
        shown = ", ".join(sessions[-10:]) if sessions else "none (the store has no runs)"
        raise ConfigError(
            f"no session {session!r} in {store}",
            expected="a session id printed by `routerlab run` (YYYYmmdd-HHMMSS-xxxx)",
            found=f"{len(sessions)} session(s), newest last: {shown}",
            fix="pass one of those ids, or the --store the session was recorded in",
        )
    return mine


def _tracking_for(runs: list[dict[str, Any]], tracking_uri: str | None, no_mlflow: bool) -> str | None:
    """The MLflow store the session was logged to: None when it was not logged there."""
    if no_mlflow or not any(r.get("mlflow_run_id") for r in runs):
        return None
    # imported here: MLflow costs seconds at import, and a session logged without it never loads it
    from routerlab.eval.tracking import resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not Path(uri[len(prefix) :]).is_file():
        raise ConfigError(
            f"the session was logged to MLflow, but there is no MLflow store at {uri}",
            expected=f"the --tracking-uri given to `routerlab run` (default {DEFAULT_TRACKING_URI})",
            found="no such SQLite file",
            fix="pass --tracking-uri URI, or --no-mlflow to report from the results store alone",
        )
    return uri


def _require_jupyter() -> None:
    """Fail clearly when the notebook tools (the ``dev`` extra) are not installed."""
    import importlib.util

    missing = [m for m in ("nbformat", "nbclient", "nbconvert", "ipykernel") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(
            "routerlab report needs the notebook tools",
            expected="nbformat, nbclient, nbconvert and ipykernel (the `dev` extra, installed by scripts/setup.sh)",
            found=f"missing: {', '.join(missing)}",
            # no square brackets: the CLI prints errors as rich markup, which would swallow `[dev]`
            fix="bash scripts/setup.sh (it installs the dev extra with the pinned versions of constraints.txt)",
        )


def _section_of(cells: list[Any], index: int) -> str:
    """The heading of the markdown section a cell belongs to (the nearest heading above it)."""
    tags = cells[index].metadata.get("tags", []) if 0 <= index < len(cells) else []
    if "parameters" in tags or "injected-parameters" in tags:
        return "parameters" if "parameters" in tags else "injected parameters"
    for cell in reversed(cells[:index]):
        if cell.cell_type == "markdown":
            heading = next((ln for ln in cell.source.splitlines() if ln.startswith("#")), None)
            if heading:
                return heading.lstrip("#").strip()
    return "top of the notebook"


def _inject(nb: Any, params: dict[str, Any], header: str) -> None:
    """Insert the parameter overrides after the ``parameters`` cell and a header after the title."""
    import nbformat

    at = next((i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])), None)
    if at is None:
        raise ConfigError(
            "the report notebook has no parameters cell",
            expected="a code cell tagged `parameters` (SESSION, STORE, TRACKING_URI)",
            found=f"{len(nb.cells)} cells without that tag",
            fix="tag the notebook's first code cell `parameters` (JupyterLab: property inspector > cell tags)",
        )
    source = "\n".join(f"{name} = {value!r}" for name, value in params.items())
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]}))
    title = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("# ")), at + 1)
    nb.cells.insert(title + 1, nbformat.v4.new_markdown_cell(header, metadata={"tags": ["report-header"]}))


def _cell_error(nb: Any, index: int, n_code: int, exc: BaseException) -> ReportCellError:
    """A :class:`ReportCellError` naming the cell (number among code cells, section) and its error."""
    cells = list(nb.cells)
    number = sum(1 for c in cells[: index + 1] if c.cell_type == "code")
    where = f"cell {number} of {n_code} (section {_section_of(cells, index)!r})"
    ename, evalue = getattr(exc, "ename", type(exc).__name__), getattr(exc, "evalue", str(exc))
    source = cells[index].source.strip().splitlines() if 0 <= index < len(cells) else []
    first = source[0] if source else ""
    return ReportCellError(
        f"the report notebook failed in {where}: {ename}",
        expected="every cell of the notebook to run",
        found=_ANSI.sub("", f"{ename}: {evalue}").strip() + (f"\n  in the cell starting: {first}" if first else ""),
        fix="open the notebook in JupyterLab (`.venv/bin/jupyter lab notebooks/`), set SESSION/STORE/"
        "TRACKING_URI in its first cell and run it to see the full traceback",
        details={"cell": number, "section": _section_of(cells, index), "ename": ename},
    )


def _execute(nb: Any, cwd: Path, timeout_s: int, progress: Callable[[str], None]) -> None:
    """Run every cell in a fresh ``python3`` kernel, reporting each code cell as it starts."""
    import nbclient
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellControlSignal, DeadKernelError

    cells = list(nb.cells)
    n_code = sum(1 for c in cells if c.cell_type == "code")
    state = {"index": -1, "number": 0, "started": time.perf_counter()}

    def on_start(cell: Any, cell_index: int) -> None:
        state["index"] = cell_index
        if cell.cell_type == "code":
            state["number"] += 1
            elapsed = time.perf_counter() - state["started"]
            progress(f"cell {state['number']}/{n_code} at {elapsed:.1f} s: {_section_of(cells, cell_index)}")

    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=timeout_s,
        resources={"metadata": {"path": str(cwd)}},
        on_cell_start=on_start,
        # the kernel's own log (e.g. its note on local TCP transport) would interleave with the progress
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    # figures go to PNG in the kernel whatever the user's matplotlib backend; no MLflow progress bars
    env = {"MPLBACKEND": "module://matplotlib_inline.backend_inline", "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}
    try:
        client.execute(env={**os.environ, **env})
    except NoSuchKernel as exc:
        raise ConfigError(
            "no Jupyter kernel named python3",
            expected="ipykernel's python3 kernel (installed with the `dev` extra)",
            found=str(exc),
            fix="bash scripts/setup.sh, or .venv/bin/python -m ipykernel install --sys-prefix",
        ) from None
    except (CellControlSignal, DeadKernelError) as exc:
        raise _cell_error(nb, int(state["index"]), n_code, exc) from None


#: the tag of cells that form a section shown only when it has something to show
OPTIONAL_SECTION = "optional-section"
#: the tag of cells for the person running the notebook (how to set it up), not for a page's reader
NOTEBOOK_ONLY = "notebook-only"


def drop_empty_sections(nb: Any) -> int:
    """Remove what a shared page's reader has no use for; returns how many cells were removed.

    Cells tagged ``notebook-only`` (the set-up instructions) always go. Cells tagged
    ``optional-section`` go when none of their code cells printed anything: a section whose input
    is missing (no ``toolscale.json`` for this session) is only noise on a shared page.
    """
    tagged = [c for c in nb.cells if OPTIONAL_SECTION in c.metadata.get("tags", [])]
    drop = [c for c in nb.cells if NOTEBOOK_ONLY in c.metadata.get("tags", [])]
    if not any(c.get("outputs") for c in tagged if c.cell_type == "code"):
        drop += tagged
    nb.cells = [c for c in nb.cells if not any(c is d for d in drop)]
    return len(drop)


def _to_html(nb: Any, *, with_code: bool, title: str) -> tuple[str, int]:
    """The executed notebook as one self-contained HTML page, and how many images it embeds."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        template_file=_TEMPLATE_NAME,
        extra_loaders=[DictLoader({_TEMPLATE_NAME: _TEMPLATE})],
        exclude_input=not with_code,
        exclude_input_prompt=not with_code,
        exclude_output_prompt=True,
        embed_images=True,
    )
    html, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    return html, html.count('src="data:image/png;base64,')


def make_report(
    session: str,
    out: str | Path,
    *,
    store: str | Path = DEFAULT_STORE_PATH,
    tracking_uri: str | None = None,
    no_mlflow: bool = False,
    with_code: bool = False,
    notebook: str | Path | None = None,
    cwd: str | Path | None = None,
    timeout_s: int = CELL_TIMEOUT_S,
    progress: Callable[[str], None] = lambda _: None,
) -> ReportResult:
    """Execute the comparison notebook for one session and write it as a self-contained HTML file.

    Args:
        session: A session id printed by ``routerlab run``.
        out: The HTML file to write (its directory is created; written only when every cell ran).
        store: The DuckDB results store the session was recorded in.
        tracking_uri: The session's MLflow store (default as ``routerlab run``: ``$MLFLOW_TRACKING_URI``
            or ``sqlite:///mlflow.db``); the page's header names it.
        no_mlflow: Name no MLflow store (also none when the session was run with
            ``--no-mlflow``, which the store records).
        with_code: Keep the code cells in the page.
        notebook: The notebook to execute (default :data:`NOTEBOOK`).
        cwd: The kernel's working directory (relative paths in the notebook resolve there;
            default the current directory).
        timeout_s: Seconds one cell may run.
        progress: Called with one line as each code cell starts (with the seconds since the
            kernel was asked to start) and before rendering.

    Returns:
        What was written, with the wall time.

    Raises:
        ConfigError: The notebook tools are not installed, the store is missing or unreadable,
            the session is not in it, or its MLflow store is missing.
        ReportCellError: A cell failed, timed out or killed the kernel (names the cell).
    """
    started = time.perf_counter()
    _require_jupyter()
    store_path = Path(store).resolve()
    runs = _session_runs(store_path, session)
    uri = _tracking_for(runs, tracking_uri, no_mlflow)
    nb_path = Path(notebook or NOTEBOOK)
    if not nb_path.is_file():
        raise ConfigError(
            f"no notebook at {nb_path}",
            expected="notebooks/router_comparison.ipynb of a routerlab checkout",
            found="no such file",
            fix="run routerlab from its checkout (an editable install, as scripts/setup.sh makes)",
        )
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    routers = ", ".join(dict.fromkeys(str(r["router"]) for r in runs))
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    header = (
        f"**Session `{session}`** ({len(runs)} runs: {routers}), from `{store_path}`"
        + (f", logged to MLflow `{uri}`" if uri else " (not logged to MLflow)")
        + f". Report written by `routerlab report` on {made}."
    )
    params = {"SESSION": session, "STORE": str(store_path), "TRACKING_URI": uri, "SMALL_RUN_DIR": None}
    _inject(nb, params, header)
    progress(f"running {nb_path.name} for session {session} ({len(runs)} runs)")
    _execute(nb, Path(cwd or Path.cwd()).resolve(), timeout_s, progress)
    drop_empty_sections(nb)
    progress("rendering HTML")
    html, images = _to_html(nb, with_code=with_code, title=f"Router comparison, session {session}")
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    # written in one step: a failed or interrupted report never leaves half a page behind
    tmp = out_path.with_name(f".{out_path.name}.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out_path)
    n_code = sum(1 for c in nb.cells if c.cell_type == "code")
    return ReportResult(
        out=out_path,
        session=session,
        tracking_uri=uri,
        code_cells=n_code,
        images=images,
        bytes=out_path.stat().st_size,
        seconds=time.perf_counter() - started,
    )
