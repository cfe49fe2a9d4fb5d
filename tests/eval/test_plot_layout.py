"""Labels of the figures never overlap: the extent check itself, and every figure at crowded sizes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # non-interactive: tests never open a window

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from routerlab._runs.demo import make_demo_session
from routerlab.eval import analysis, plots
from routerlab.eval.plot_layout import (
    TextBox,
    clipped_texts,
    drawn_texts,
    fit_texts_to_canvas,
    overlapping_texts,
    place_point_labels,
)


def _all_figures(results: analysis.ResultsByRouter) -> dict[str, Figure]:
    costs = analysis.router_cost(results)
    return {
        "rates": plots.plot_rates(analysis.rates_table(results)),
        "success per intent": plots.plot_success_per_intent(analysis.success_per_intent(results)),
        "latency": plots.plot_latency(analysis.latency_frame(results)),
        "cost-quality (tokens)": plots.plot_cost_quality(costs),
        "cost-quality (route time)": plots.plot_cost_quality(costs, cost="route_node_s_per_ex", quality="route"),
        "confusion": plots.plot_confusion(analysis.confusion_matrices(results)),
        "failure attribution": plots.plot_attribution(analysis.attribution_counts(results)),
        "risk-coverage": plots.plot_risk_coverage(analysis.risk_coverage_frame(results)),
    }


# -- the check ---------------------------------------------------------------------------------


def test_the_check_finds_texts_drawn_over_each_other():
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, "first label", transform=ax.transAxes)
    ax.text(0.52, 0.51, "second label", transform=ax.transAxes)
    ax.text(0.1, 0.1, "apart", transform=ax.transAxes)
    assert overlapping_texts(fig) == [("first label", "second label")]


def test_rotated_labels_are_checked_as_rotated_rectangles():
    # two 45-degree labels side by side: their axis-aligned extents overlap, the glyphs do not
    fig = Figure(figsize=(4, 3), dpi=100)
    ax = fig.add_subplot()
    ax.set_axis_off()
    for x in (0.40, 0.47):
        ax.text(x, 0.5, "a long rotated label", rotation=45, ha="center", va="center", transform=ax.transAxes)
    texts = drawn_texts(fig)
    extents = [t.get_window_extent() for t in texts]
    assert extents[0].overlaps(extents[1])  # the crude test would call this a collision
    assert overlapping_texts(fig) == []
    # and the same labels crossing each other do collide
    texts[1].set_rotation(-45)
    assert overlapping_texts(fig) == [("a long rotated label", "a long rotated label")]


def test_only_drawn_texts_count():
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.set_xlim(0, 1)
    ax.text(0.5, 0.5, "shown")
    hidden = ax.text(0.5, 0.5, "hidden")
    hidden.set_visible(False)
    ax.annotate("clipped away", (5.0, 0.5), annotation_clip=True)  # outside the axes: never drawn
    names = [t.get_text() for t in drawn_texts(fig)]
    assert "shown" in names and "hidden" not in names and "clipped away" not in names
    assert overlapping_texts(fig) == []


def test_box_intersection_is_symmetric_and_tolerates_touching():
    a = TextBox("a", 0, 0, 10, 4, 0)
    b = TextBox("b", 10, 0, 10, 4, 0)  # edges touch
    c = TextBox("c", 9, 0, 10, 4, 0)
    assert not a.intersects(b) and not b.intersects(a)
    assert a.intersects(c) and c.intersects(a)
    upright = TextBox("d", 5.5, 0, 10, 4, 90)  # turned across a's right end
    assert a.intersects(upright) and upright.intersects(a)


def test_point_labels_avoid_markers_and_each_other():
    fig = Figure(figsize=(5, 4), dpi=100)
    ax = fig.add_subplot()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    points = [(0.5, 0.5), (0.52, 0.5), (0.5, 0.53), (0.48, 0.48)]
    for x, y in points:
        ax.scatter([x], [y], s=36)
    notes = place_point_labels(ax, points, ["alpha router", "beta router", "gamma router", "delta router"])
    assert overlapping_texts(fig) == []
    inside = ax.get_window_extent()
    for note in notes:
        box = note.get_window_extent()
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
        for x, y in points:  # no label covers a marker's centre
            px, py = ax.transData.transform((x, y))
            assert not (box.x0 <= px <= box.x1 and box.y0 <= py <= box.y1)


# -- the figures, crowded ----------------------------------------------------------------------


_INTENTS = ("sql", "explain", "fix", "chat", "clarify", "refuse")


@pytest.fixture
def crowded(make_result):
    """Ten routers with long names over 24 examples; routers i, i+3, i+6... give the same results."""
    out = {}
    for i in range(10):
        kind = i % 3
        name = f"router_with_a_long_name_{i}"
        results = []
        for j in range(24):
            intent = _INTENTS[j % len(_INTENTS)]
            ok = float((j + kind) % (kind + 2) == 0)
            scores = {"route": ok, "ex": ok if intent == "sql" else None, "chain_valid": 1.0, "success": ok}
            results.append(
                make_result(
                    f"e{j}",
                    name,
                    scores,
                    intent=intent,
                    latency=0.5 + kind + j / 24,
                    router_tokens=(40 * kind, 5 * kind),
                    lm_calls=(min(kind, 1), 2),
                )
            )
        out[name] = results
    return out


def test_crowded_figures_have_no_overlapping_labels(crowded):
    for name, fig in _all_figures(crowded).items():
        assert overlapping_texts(fig) == [], name
        assert clipped_texts(fig) == [], name


def test_routers_on_one_point_share_a_label_and_each_marker_shows(crowded):
    fig = plots.plot_cost_quality(analysis.router_cost(crowded))
    ax = fig.axes[0]
    markers = [c for c in ax.collections if c.get_label() in crowded]
    assert len(markers) == len(crowded)  # one marker per router, none dropped
    by_point: dict[tuple[float, float], list] = {}
    for m in markers:
        by_point.setdefault(tuple(m.get_offsets()[0]), []).append(m)
    assert len(by_point) == 3
    for group in by_point.values():
        # drawn biggest first: each later (smaller) marker leaves a ring of every earlier one
        group.sort(key=lambda m: m.get_zorder())
        sizes = [float(m.get_sizes()[0]) for m in group]
        assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)
    labels = [t.get_text() for t in ax.texts]
    # one label per point naming every router on it, one per line
    assert len(labels) == 3
    assert sorted(n for lab in labels for n in lab.split("\n")) == sorted(crowded)
    assert overlapping_texts(fig) == []
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[: len(crowded)] == list(crowded)


def test_narrow_bars_turn_their_value_labels(crowded):
    fig = plots.plot_success_per_intent(analysis.success_per_intent(crowded))
    values = [t for t in fig.axes[0].texts if t.get_visible() and t.get_text()[:1].isdigit()]
    drawn = {id(t) for t in drawn_texts(fig)}
    shown = [t for t in values if id(t) in drawn]
    # either every value is printed upright, or (too many bars) the title says where they are
    assert (shown and all(t.get_rotation() == 90 for t in shown)) or "see the table" in fig.axes[0].get_title()
    assert overlapping_texts(fig) == []


def test_failure_chart_has_one_row_per_router_and_its_total(crowded):
    fig = plots.plot_attribution(analysis.attribution_counts(crowded))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(crowded)
    counts = analysis.attribution_counts(crowded)
    totals = [t.get_text().strip() for t in ax.texts if t.get_text().startswith(" ")]
    assert totals == [f"{float(v):g}" for v in counts.sum(axis=1)]
    assert overlapping_texts(fig) == []


def _inside_canvas(fig: Figure) -> list[str]:
    """Every drawn text whose window extent leaves the figure's canvas (0.5 px tolerance)."""
    texts = drawn_texts(fig)  # draws the figure: the extents below are the drawn ones
    renderer = fig.canvas.get_renderer()
    width, height = fig.canvas.get_width_height()
    out = []
    for t in texts:
        box = t.get_window_extent(renderer)
        if box.x0 < -0.5 or box.y0 < -0.5 or box.x1 > width + 0.5 or box.y1 > height + 0.5:
            out.append(f"{t.get_text()!r} at {box.bounds} on a {width}x{height} canvas")
    return out


#: the run labels of a scripted main job (issue 47): the routing part's runs beside the end-to-end ones
_MAIN_JOB_RUNS = [
    *(f"{r} (routing)" for r in ("always_sql (baseline)", "rules", "semantic", "hybrid", "single_call (baseline)")),
    "always_sql (baseline)",
    "rules",
    "semantic",
    "hybrid",
    "single_call (baseline)",
]


def _latency(runs: list[str], nodes: tuple[str, ...] = ("dispatch", "respond", "route", "tools")) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for i, run in enumerate(runs):
        for j in range(8):
            rows.append({"router": run, "example_id": f"e{j}", "attempt": 0, "stage": "end_to_end",
                         "seconds": float(rng.uniform(0.0, 1.0 + i / 10))})  # fmt: skip
            rows += [{"router": run, "example_id": f"e{j}", "attempt": 0, "stage": f"node.{n}",
                      "seconds": float(rng.choice([0.0, 1e-4, 0.01, 0.8]))} for n in nodes]  # fmt: skip
    return pd.DataFrame(rows, columns=["router", "example_id", "attempt", "stage", "seconds"])


@pytest.mark.parametrize(
    "runs",
    [
        _MAIN_JOB_RUNS,  # the scripted main job whose y label ran off the top (scripts/screenshots.py)
        [f"a_router_with_an_even_longer_name_than_those_{i} (baseline) (routing)" for i in range(10)],
    ],
    ids=["main-job", "longer"],
)
def test_latency_figure_keeps_every_label_on_the_canvas_with_ten_long_run_labels(runs):
    # upright tick labels below the axes left them shorter than their y label, cut off at the top
    fig = plots.plot_latency(_latency(runs))
    assert _inside_canvas(fig) == []
    assert clipped_texts(fig) == []
    assert overlapping_texts(fig) == []
    e2e, node = fig.axes[:2]
    assert [t.get_text() for t in e2e.get_xticklabels()] == runs  # every run is named, none dropped
    assert node.get_ylabel() == "time in node per example (s, symlog)"


@pytest.mark.parametrize("names", [_MAIN_JOB_RUNS, [f"router_with_a_long_name_{i} (routing)" for i in range(10)]])
def test_bar_figures_keep_every_label_on_the_canvas_with_ten_long_run_labels(names):
    rates = pd.DataFrame(
        [{"router": r, "metric": m, "value": 0.5, "ci_low": 0.3, "ci_high": 0.7} for r in names
         for m in ("route", "ex", "chain_valid", "success")]
    )  # fmt: skip
    assert _inside_canvas(plots.plot_rates(rates)) == []


def test_fitting_grows_a_figure_until_a_long_y_label_fits_and_leaves_a_fitting_one_alone():
    fig = Figure(figsize=(5, 3), layout="constrained", dpi=100)
    ax = fig.add_subplot()
    ax.set_xticks(range(3), ["a very long upright tick label"] * 3, rotation=90)
    ax.set_ylabel("a y label far longer than the short axes it is centred on")
    assert _inside_canvas(fig) != []  # the case the helper is for: cut off before
    before = fig.get_size_inches().copy()
    assert fit_texts_to_canvas(fig) is fig
    assert _inside_canvas(fig) == []
    width, height = fig.get_size_inches()
    assert width == before[0] and height > before[1]  # grown only where the text ran off
    # a figure whose texts already fit keeps its size
    small = Figure(figsize=(5, 3), layout="constrained")
    small.add_subplot().set_ylabel("short")
    fit_texts_to_canvas(small)
    assert list(small.get_size_inches()) == [5, 3]


# -- a real (scripted) session -----------------------------------------------------------------


def test_figures_of_a_scripted_session_have_no_overlapping_labels(tmp_path_factory):
    # the directory the other demo tests use: one demo per pytest run
    store, _, session = make_demo_session(tmp_path_factory.getbasetemp() / "routerlab-demo")
    data = analysis.load_store(store, session=session)
    for name, fig in _all_figures(data).items():
        assert overlapping_texts(fig) == [], name
        assert clipped_texts(fig) == [], name
    # the baselines sit on the rule router's point: one label names both, both markers drawn
    fig = plots.plot_cost_quality(analysis.router_cost(data))
    assert "rules\noracle (baseline)" in [t.get_text() for t in fig.axes[0].texts]


@pytest.mark.parametrize("largest", [0.00042, 0.0173, 0.2, 3.7, 1234.0])
def test_cost_axis_ticks_fit_beside_a_long_legend_at_any_scale(largest):
    # route-node seconds are hundredths on a fast machine: the default locator then printed
    # eight 6-character ticks ("0.0025", "0.0050", ...) that ran into each other (CI, 2026-11-26)
    names = ["rules", "oracle (baseline)", "llm_with_a_long_name", "semantic_router_long", "hybrid_router_long"]
    costs = pd.DataFrame(
        {
            "route_node_s_per_ex": np.linspace(0.0, largest, len(names)),
            "route": [0.5, 0.6, 0.7, 0.8, 0.9],
            "baseline": [False, True, False, False, False],
        },
        index=names,
    )
    fig = plots.plot_cost_quality(costs, cost="route_node_s_per_ex", quality="route")
    assert overlapping_texts(fig) == []
    assert clipped_texts(fig) == []
    ticks = [t for t in fig.axes[0].get_xticks() if fig.axes[0].get_xlim()[0] <= t <= fig.axes[0].get_xlim()[1]]
    assert 2 <= len(ticks) <= 6
