"""``routerlab report``: the comparison notebook of a scripted session, as one HTML page in a real browser."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from typer.testing import CliRunner

import routerlab.cli as cli
import routerlab.report as report
from routerlab.agents.errors import ConfigError, RouterlabError
from routerlab.app.demo import make_demo_session
from tests.browser import (
    CHROMEDRIVER,
    CHROMIUM,
    OVERLAPPING_TEXT_JS,
    WIDTHS,
    check_images,
    chromium,
    need_browser,
    set_width,
)

#: the report's section headings of the demo session (end to end only, 6 requests), in page order
SECTIONS = [
    "Router comparison",
    "Verdict",
    "End to end: whole turns on 6 requests",
    "Rates with 95% intervals",
    "Per gold intent",
    "Confusion matrices (gold intent by decided intent)",
    "Failures",
    "Cost",
    "The runs",
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    # the directory tests/eval/test_analysis.py and the notebook tests use: one demo per pytest run
    return make_demo_session(tmp_path_factory.getbasetemp() / "routerlab-demo")


@pytest.fixture(autouse=True)
def wide_errors(monkeypatch):
    # rich wraps errors at 80 columns; the assertions look for whole paths and ids
    monkeypatch.setattr(cli._err, "width", 1000)


def _invoke(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli.app, ["report", *args])
    assert not isinstance(out.exception, RouterlabError | AssertionError), out.exception
    return out.exit_code, " ".join(out.output.split())


# -- the real report of the demo session, through the command line -----------------------------


@pytest.fixture(scope="module")
def rendered(demo, tmp_path_factory):
    store, uri, session = demo
    work = tmp_path_factory.mktemp("report")
    out = work / "shared" / "report.html"
    args = ["report", session, "--store", store, "--tracking-uri", uri, "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "routerlab.cli", *args], capture_output=True, text=True, timeout=900, cwd=work
    )
    return proc, out, session


def test_report_runs_with_progress_and_writes_one_file(rendered):
    proc, out, _ = rendered
    assert proc.returncode == 0, proc.stderr
    # progress: one line per code cell as it starts, numbered, with its section
    cells = re.findall(r"^report: cell (\d+)/(\d+) at [\d.]+ s: (.+)$", proc.stderr, flags=re.M)
    total = int(cells[0][1])
    assert [int(n) for n, _, _ in cells] == list(range(1, total + 1))
    assert {section for _, _, section in cells} >= {"parameters", "Verdict", "The runs"}
    assert "report: rendering HTML" in proc.stderr
    summary = re.search(r"wrote (\S+) \(([\d.]+) MB, (\d+) figures, (\d+) cells\) in ([\d.]+) s", proc.stdout)
    # the cells of sections left off the page (set-up, empty ones) are not counted in the summary
    assert summary and Path(summary[1]) == out and int(summary[3]) >= 2 and int(summary[4]) <= total
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]  # no temporary file left behind

    html = out.read_text()
    # self-contained: no script, stylesheet or image is fetched from anywhere
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+href=", html)
    assert not re.search(r"<img[^>]+src=\"(?!data:image/png;base64,)", html)
    # code cells are left out by default
    code_cells = re.findall(r'class="jp-Cell jp-CodeCell[^"]*"', html)
    assert len(code_cells) == int(summary[4]) and all("jp-mod-noInput" in c for c in code_cells)
    assert 'class="highlight hl-ipython3"' not in html and "view.show_" not in html


def test_report_renders_in_headless_chromium(rendered, tmp_path):
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("/usr/bin/chromium is absent (install it with scripts/install_browser.sh)")
    from selenium.webdriver.common.by import By

    proc, out, session = rendered
    assert proc.returncode == 0, proc.stderr
    with chromium(tmp_path / "profile", width=1280) as driver:
        driver.get(out.as_uri())
        assert session in driver.title
        headings = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "h1, h2, h3")]
        found = [h for h in headings if h in SECTIONS]
        assert found == SECTIONS, headings
        # every figure is an embedded PNG that the browser decoded
        images = driver.find_elements(By.CSS_SELECTOR, "img")
        assert len(images) >= 2
        sizes = [driver.execute_script("return [arguments[0].naturalWidth, arguments[0].complete]", i) for i in images]
        assert all(w > 100 and done for w, done in sizes), sizes
        # and nothing was fetched over the network to draw the page
        fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert [u for u in fetched if not u.startswith("data:")] == []
        text = driver.find_element(By.TAG_NAME, "body").text
        assert f"Session {session}" in text
        # six requests cannot tell routers apart: the verdict says so once, and names no best
        assert "too few to compare: n=6" in text and "best rules" not in text
        assert "n/a" not in text and "NaN" not in text
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
        # the last section is reachable: the page is not cut off
        driver.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        last = next(h for h in driver.find_elements(By.TAG_NAME, "h2") if h.text == "The runs")
        assert last.is_displayed()
        assert driver.save_screenshot(str(tmp_path / "report-end.png"))


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
def test_report_layout_holds_at_page_widths(rendered, tmp_path, width):
    """At a laptop's and a half screen's width: no text over text, every figure whole, screenshots."""
    need_browser()
    proc, out, session = rendered
    assert proc.returncode == 0, proc.stderr
    with chromium(tmp_path / "profile", width) as driver:
        set_width(driver, width)
        driver.get(out.as_uri())
        assert driver.execute_script("return window.innerWidth") == width
        assert session in driver.title
        # the page's own text (verdict, tables, headings) never runs into other text
        assert driver.execute_script(OVERLAPPING_TEXT_JS) == []
        # the figures are PNGs whose labels were placed clear of each other (tests/eval/test_plot_layout.py);
        # shown whole and scaled as a whole, they keep that layout at this width
        images = check_images(driver, minimum=2)
        assert all(img["shown"][0] >= 0.5 * min(img["natural"][0], width - 80) for img in images), images
        # nothing wider than the window: no sideways scrolling to read the page
        scroll = driver.execute_script("return document.documentElement.scrollWidth")
        assert scroll <= width, scroll
        height = driver.execute_script("return document.body.scrollHeight")
        for i, top in enumerate(range(0, height, 2000)):
            driver.execute_script(f"window.scrollTo(0, {top})")
            shot = tmp_path / f"report-{width}px-{i:02d}.png"
            assert driver.save_screenshot(str(shot))
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- parameters, code cells and failures, on a small notebook ----------------------------------


def _notebook(path: Path, *cells: tuple[str, str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell('SESSION = None\nSTORE = "x"\nTRACKING_URI = "y"\nSMALL_RUN_DIR = None')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_markdown_cell("# Small report")]
    for kind, source in cells:
        make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
        nb.cells.append(make(source))
    nbformat.write(nb, path)
    return path


def test_parameters_are_injected_and_code_is_kept_on_request(demo, tmp_path):
    store, _, session = demo
    nb = _notebook(
        tmp_path / "small.ipynb",
        ("markdown", "## Parameters seen"),
        ("code", "print(f'seen {SESSION} {STORE} {TRACKING_URI} {SMALL_RUN_DIR}')"),
    )
    lines: list[str] = []
    result = report.make_report(
        session, tmp_path / "r.html", store=store, no_mlflow=True, with_code=True, notebook=nb, progress=lines.append
    )
    html = result.out.read_text()
    # the injected cell overrides the defaults; --no-mlflow passes no tracking URI
    assert f"seen {session} {Path(store).resolve()} None None" in html
    assert result.tracking_uri is None and "not logged to MLflow" in html
    # --with-code keeps every code cell's source (highlighted, so look for its pieces)
    code_cells = re.findall(r'class="jp-Cell jp-CodeCell[^"]*"', html)
    assert len(code_cells) == 3 and not any("jp-mod-noInput" in c for c in code_cells)
    assert html.count('class="highlight hl-ipython3"') == 3
    assert "SMALL_RUN_DIR" in html and "print" in html
    assert result.code_cells == 3 and result.images == 0
    expected = ["cell 1/3 at s: parameters", "cell 2/3 at s: injected parameters", "cell 3/3 at s: Parameters seen"]
    assert [re.sub(r"[\d.]+ s", "s", line) for line in lines[1:]] == [*expected, "rendering HTML"]


def test_a_failed_cell_is_named_and_writes_nothing(demo, tmp_path, monkeypatch):
    store, uri, session = demo
    nb = _notebook(
        tmp_path / "failing.ipynb",
        ("markdown", "## Fine"),
        ("code", "x = 1"),
        ("markdown", "## Broken section"),
        ("code", "y = [1]\nx / 0  # [/] is not markup"),
        ("code", "print('never')"),
    )
    out = tmp_path / "r.html"
    with pytest.raises(report.ReportCellError) as err:
        report.make_report(session, out, store=store, tracking_uri=uri, notebook=nb)
    message = str(err.value)
    assert "cell 4 of 5 (section 'Broken section')" in message and "ZeroDivisionError" in message
    assert "in the cell starting: y = [1]" in message and "jupyter lab" in message
    assert err.value.details["cell"] == 4 and not out.exists()
    # through the command: the input was fine, so exit 1 (not 2), with the same message
    monkeypatch.setattr(report, "NOTEBOOK", nb)
    code, text = _invoke(session, "--store", store, "--tracking-uri", uri, "--out", str(out))
    assert code == 1 and "cell 4 of 5 (section 'Broken section')" in text and "ZeroDivisionError" in text
    assert "y = [1]" in text  # printed as text, not swallowed as rich markup
    assert not out.exists()


# -- bad input: clear errors before any kernel starts ------------------------------------------


def test_unknown_session_lists_the_known_ones(demo, tmp_path):
    store, _, session = demo
    code, text = _invoke("19990101-000000-dead", "--store", store, "--out", str(tmp_path / "r.html"))
    assert code == 2
    assert "no session '19990101-000000-dead'" in text and session in text and "fix:" in text
    assert not (tmp_path / "r.html").exists()


def test_missing_or_unreadable_store(tmp_path):
    code, text = _invoke("20260101-000000-abcd", "--store", str(tmp_path / "nope.duckdb"))
    assert code == 2 and f"no results store at {tmp_path / 'nope.duckdb'}" in text and "--store" in text
    junk = tmp_path / "junk.duckdb"
    junk.write_bytes(b"not a database" * 100)
    code, text = _invoke("20260101-000000-abcd", "--store", str(junk))
    assert code == 2 and "cannot read the results store" in text


def test_missing_mlflow_store_of_a_logged_session(demo, tmp_path):
    store, _, session = demo
    uri = f"sqlite:///{tmp_path / 'gone.db'}"
    code, text = _invoke(session, "--store", store, "--tracking-uri", uri, "--out", str(tmp_path / "r.html"))
    assert code == 2 and "no MLflow store at" in text and "--no-mlflow" in text
    with pytest.raises(ConfigError):
        report.make_report(session, tmp_path / "r.html", store=store, tracking_uri=uri)


def test_without_mlflow_the_notebook_reports_from_the_store_alone(demo, tmp_path):
    store, _, session = demo
    result = report.make_report(session, tmp_path / "r.html", store=store, no_mlflow=True)
    html = result.out.read_text()
    # every figure comes from the results store: the page is whole without MLflow
    assert result.tracking_uri is None and "not logged to MLflow" in html
    assert "Verdict" in html and "The runs" in html and result.images >= 2


def test_missing_notebook_tools_are_named(demo, tmp_path, monkeypatch):
    import importlib.util

    store, _, session = demo
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nbconvert" else real(name, *a))
    code, text = _invoke(session, "--store", store, "--out", str(tmp_path / "r.html"))
    assert code == 2 and "missing: nbconvert" in text and "scripts/setup.sh" in text


def test_shared_page_drops_setup_and_empty_optional_sections():
    """What the page's reader has no use for goes: the set-up text, a section with nothing to show."""
    import nbformat

    from routerlab.report import drop_empty_sections

    nb = nbformat.read(Path(__file__).resolve().parents[2] / "notebooks" / "router_comparison.ipynb", as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    n_setup = sum("notebook-only" in t for t in tags)
    n_optional = sum("optional-section" in t for t in tags)
    assert n_setup == 2 and n_optional == 2  # the Setup section; the tool-scale section
    # never executed: the tool-scale code printed nothing, so its section goes too
    empty = copy.deepcopy(nb)
    assert drop_empty_sections(empty) == n_setup + n_optional
    assert not any("Setup" in c.source or "Tool scale" in c.source for c in empty.cells if c.cell_type == "markdown")
    # the section stays when it has output
    shown = copy.deepcopy(nb)
    code = next(c for c in shown.cells if "optional-section" in c.metadata.get("tags", []) and c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="sizes 9, 64\n")]
    assert drop_empty_sections(shown) == n_setup
    # the verdict is the first section the reader meets
    first = next(c for c in empty.cells if c.cell_type == "markdown" and c.source.startswith("## "))
    assert first.source.startswith("## Verdict")


def test_report_opens_on_the_verdict_with_readable_tables(rendered):
    """Human column names, rounded numbers, and CSS that keeps every table inside a 900 px page."""
    proc, out, _ = rendered
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert "every table fits a 900 px window" in html and "overflow-x: auto" in html
    # the flat storage names stay in csv/json; the page says them in words, intervals in one cell
    for raw in ("diverted_low", "success_n", "0.0000", "n/a", "NaN"):
        assert raw not in html, raw
    assert "success" in html and "(count/n)" not in html
    # the first heading after the title is the verdict, and the title's introduction is short
    headings = re.findall(r"<h([12])[^>]*>(.*?)<", html)
    assert [h for _, h in headings[:2]] == ["Router comparison", "Verdict"], headings[:3]
