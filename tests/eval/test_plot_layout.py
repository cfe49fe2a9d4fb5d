"""Labels of the figures never overlap: the extent check itself, and every figure at crowded sizes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # non-interactive: tests never open a window

import pytest
from matplotlib.figure import Figure

from routerlab.app.demo import make_demo_session
from routerlab.eval.plot_layout import (
    TextBox,
    clipped_texts,
    drawn_texts,
    fit_texts_to_canvas,
    overlapping_texts,
)
from routerlab.eval.risk_figure import plot_risk_coverage, risk_coverage_frame
from routerlab.eval.store import ResultsStore

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
    fig = plot_risk_coverage(risk_coverage_frame(crowded))
    assert overlapping_texts(fig) == []
    assert clipped_texts(fig) == []


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
    source = ResultsStore(store, read_only=True)
    runs = [r for r in source.runs()["run_id"] if r.startswith(session)]
    data = {r: source.results(r) for r in runs}
    fig = plot_risk_coverage(risk_coverage_frame(data))
    assert overlapping_texts(fig) == []
    assert clipped_texts(fig) == []
