r"""Screenshots of a session as a person sees it, taken in headless Chromium and checked.

Renders ``routerlab report SESSION`` to HTML and screenshots it at 1400 and 900 px, then starts
``routerlab ui`` on the session's MLflow store (loopback, a free port; stopped at the end) and
screenshots the first page it prints for the session (the runs table with the headline
metrics). Each check that fails is printed and the script exits 1:

- the report: no text runs into other text, no table or figure wider than the window (tables
  wrap or scroll inside themselves), every figure decoded, whole and scaled as a whole;
- the figures' labels: the report's figures are drawn again from the session's comparison as the
  notebook draws them and no two labels overlap or run off the canvas
  (:func:`routerlab.eval.plot_layout.overlapping_texts`), each confusion matrix at least 250 px;
- MLflow: the runs table of the session, not the GenAI overview.

Needs ``/usr/bin/chromium`` and ``chromedriver`` (``scripts/install_browser.sh``). Usage::

    .venv/bin/routerlab run --lm scripted:basic --store /tmp/s/results.duckdb \
        --tracking-uri sqlite:////tmp/s/mlflow.db
    .venv/bin/python scripts/screenshots.py SESSION --store /tmp/s/results.duckdb \
        --tracking-uri sqlite:////tmp/s/mlflow.db --out docs/results/img
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the page checks shared with the browser tests (tests/browser.py)

from tests.browser import (  # noqa: E402
    CHROMEDRIVER,
    CHROMIUM,
    IMAGES_JS,
    OVERLAPPING_TEXT_JS,
    WIDTHS,
    chromium,
    set_width,
)
from tests.servers import routerlab_ui  # noqa: E402

#: clicks the close button of MLflow's assistant panel (the one whose header says "Assistant"), if open
_CLOSE_ASSISTANT_JS = """
for (const b of document.querySelectorAll('button[aria-label="Close"]')) {
  let el = b;
  for (let i = 0; i < 6 && el; i++, el = el.parentElement) {
    if ((el.innerText || "").includes("Assistant")) { b.click(); return true; }
  }
}
return false;
"""

#: what MLflow 3's GenAI overview shows, never the runs table
_OVERVIEW_ONLY = ("Detect Issues", "Overall error rate")


def _report(session: str, store: str, tracking_uri: str, out: Path) -> Path:
    html = out / "report.html"
    cmd = [sys.executable, "-m", "routerlab.cli", "report", session, "--store", store]
    proc = subprocess.run(
        [*cmd, "--tracking-uri", tracking_uri, "--out", str(html)], capture_output=True, text=True, timeout=900
    )
    if proc.returncode != 0:
        raise SystemExit(f"routerlab report failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return html


def _check_report_page(driver: Any, width: int) -> list[str]:
    problems = []
    if overlaps := driver.execute_script(OVERLAPPING_TEXT_JS):
        problems.append(f"{width} px: text over text: {overlaps[:5]}")
    scroll = driver.execute_script("return document.documentElement.scrollWidth")
    if scroll > width:
        problems.append(f"{width} px: the page is {scroll} px wide (something overflows the window)")
    for img in driver.execute_script(IMAGES_JS):
        (nw, nh), (sw, sh) = img["natural"], img["shown"]
        if not img["complete"] or nw < 100 or img["right"] > img["viewport"] + 1 or abs(sw / nw - sh / nh) > 0.01:
            problems.append(f"{width} px: a figure is not shown whole and scaled as a whole: {img}")
    return problems


def _check_figure_labels(session: str, store: str) -> list[str]:
    """The report's figures drawn again from the session's comparison, as the notebook draws them."""
    import routerlab
    from routerlab.eval.analysis.figures import PANEL_IN, confusion_figure, rates_figure
    from routerlab.eval.plot_layout import clipped_texts, overlapping_texts

    model = routerlab.load(session, store=store).comparison
    figures = {f"{p.key} rates": rates_figure(p) for p in model.parts}
    figures |= {f"{p.key} confusion": f for p in model.parts if (f := confusion_figure(p)) is not None}
    problems = []
    for name, fig in figures.items():
        if overlapping := overlapping_texts(fig):
            problems.append(f"figure {name}: overlapping labels {overlapping[:5]}")
        if clipped := clipped_texts(fig):
            problems.append(f"figure {name}: labels cut off {clipped[:5]}")
        if "confusion" in name and PANEL_IN * fig.dpi < 250:
            problems.append(f"figure {name}: a confusion matrix under 250 px")
    return problems


def _mlflow_first_page(session: str, tracking_uri: str, out: Path, work: Path) -> list[str]:
    with routerlab_ui(tracking_uri, work) as ui, chromium(work / "profile-mlflow", 1400, 900) as driver:
        found = re.search(rf"session {re.escape(session)}: (\S+)", ui.log.read_text())
        if found is None:
            return [f"routerlab ui printed no page for session {session}: {ui.log.read_text()[-2000:]}"]
        driver.get(found[1])
        deadline = time.monotonic() + 120
        text = ""
        while "matching runs" not in text and time.monotonic() < deadline:
            time.sleep(0.25)
            text = driver.execute_script("return document.body ? document.body.innerText : ''")
        time.sleep(2)  # the metric cells fill in after the rows
        # MLflow 3 opens its assistant panel on a first visit, over a third of the runs table: close
        # it, as a reader does (it is MLflow's, not routerlab's, and it remembers being closed)
        driver.execute_script(_CLOSE_ASSISTANT_JS)
        time.sleep(1)
        driver.save_screenshot(str(out / "mlflow-first-page.png"))
        text = driver.execute_script("return document.body.innerText")
        problems = [] if "Run Name" in text and "matching runs" in text else ["MLflow: no runs table"]
        return problems + [f"MLflow: the GenAI overview's {w!r} is shown" for w in _OVERVIEW_ONLY if w in text]


def main(argv: list[str] | None = None) -> int:
    """Take the screenshots into ``--out`` and print every failed check; 0 when none failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("session", help="the session id routerlab run printed")
    parser.add_argument("--store", required=True, help="the DuckDB results store")
    parser.add_argument("--tracking-uri", required=True, help="the MLflow store the session was logged to")
    parser.add_argument("--out", type=Path, required=True, help="folder the PNGs are written into")
    args = parser.parse_args(argv)
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        print(f"{CHROMIUM} or {CHROMEDRIVER} is absent: install them with scripts/install_browser.sh", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="screenshots-") as tmp:
        work = Path(tmp)
        html = _report(args.session, args.store, args.tracking_uri, work)
        problems: list[str] = []
        for width in WIDTHS:
            with chromium(work / f"profile-{width}", width, 900) as driver:
                set_width(driver, width)
                driver.get(html.as_uri())
                problems += _check_report_page(driver, width)
                driver.save_screenshot(str(args.out / f"report-{width}px.png"))
        problems += _check_figure_labels(args.session, args.store)
        problems += _mlflow_first_page(args.session, args.tracking_uri, args.out, work)
    for shot in sorted(args.out.glob("*.png")):
        print(f"{shot}: {shot.stat().st_size // 1024} KB")
    for problem in problems:
        print(f"FAILED {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
