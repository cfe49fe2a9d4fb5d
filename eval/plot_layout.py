"""Text layout of the figures: where labels go so they never collide, and a check that none do.

Matplotlib places a text where it is told, whatever is already there. The figures of
:mod:`routerlab.eval.plots` therefore place their data labels from the rendered extents of the
text (what the Agg renderer would draw, in display pixels) and :func:`overlapping_texts` checks
a finished figure the same way. A figure is embedded in the report as a PNG, which a browser
only scales as a whole, so a figure free of overlaps here is free of them at any page width.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

__all__ = [
    "TextBox",
    "clipped_texts",
    "drawn_texts",
    "fit_texts_to_canvas",
    "overlapping_pairs",
    "overlapping_texts",
    "place_point_labels",
    "renderer_of",
    "text_boxes",
]

#: boxes closer than this many pixels (at the figure's dpi) count as touching, not overlapping
_TOLERANCE_PX = 0.5
#: room left between the outermost text and the canvas edge when the figure is grown (pixels)
_MARGIN_PX = 4.0
#: a figure is grown at most this many times (each growth is one layout and one draw)
_MAX_GROWTHS = 6
#: label offsets from a point tried in order, in points (the first free one wins)
_OFFSETS_PT: tuple[tuple[float, float], ...] = tuple(
    (r * math.cos(a), r * math.sin(a))
    for r in (7.0, 14.0, 22.0, 32.0, 44.0)
    for a in np.deg2rad([30, -30, 150, -150, 90, -90, 0, 180, 60, -60, 120, -120])
)


@dataclass(frozen=True)
class TextBox:
    """The rectangle a drawn text covers, in display pixels, rotated with the text.

    Attributes:
        text: The string drawn.
        cx: Centre, x.
        cy: Centre, y.
        width: Extent along the text's baseline.
        height: Extent across it.
        angle: Rotation in degrees (counter-clockwise).
    """

    text: str
    cx: float
    cy: float
    width: float
    height: float
    angle: float

    def corners(self) -> np.ndarray:
        """The four corners, shape (4, 2)."""
        t = math.radians(self.angle)
        u = np.array([math.cos(t), math.sin(t)]) * self.width / 2
        v = np.array([-math.sin(t), math.cos(t)]) * self.height / 2
        c = np.array([self.cx, self.cy])
        return np.array([c - u - v, c + u - v, c + u + v, c - u + v])

    def intersects(self, other: TextBox, tolerance: float = _TOLERANCE_PX) -> bool:
        """True when the two rotated rectangles overlap by more than ``tolerance`` pixels.

        Separating-axis test: two convex shapes are apart exactly when their projections on one
        of their edge normals are apart.
        """
        a, b = self.corners(), other.corners()
        for box in (a, b):
            for i in range(2):
                edge = box[i + 1] - box[i]
                axis = np.array([-edge[1], edge[0]])
                norm = float(np.hypot(*axis))
                if norm == 0:
                    continue
                pa, pb = a @ axis / norm, b @ axis / norm
                if pa.max() - tolerance <= pb.min() or pb.max() - tolerance <= pa.min():
                    return False
        return True


def renderer_of(fig: Figure) -> RendererBase:
    """The Agg renderer of ``fig`` after a full draw (the layout engine has run)."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _box(text: Text, renderer: RendererBase) -> TextBox:
    # the centre of a rotated rectangle is the centre of its axis-aligned extent, so the unrotated
    # size and the rotation give the exact rectangle (the extent alone over-covers rotated labels)
    extent = text.get_window_extent(renderer)
    angle = text.get_rotation()
    if angle % 180:
        text.set_rotation(0)
        flat = text.get_window_extent(renderer)
        text.set_rotation(angle)
        width, height = flat.width, flat.height
    else:
        width, height = extent.width, extent.height
    return TextBox(text.get_text(), float(extent.x0 + extent.x1) / 2, float(extent.y0 + extent.y1) / 2,
                   float(width), float(height), float(angle))  # fmt: skip


def _draw_recording(fig: Figure) -> tuple[list[Text], RendererBase]:
    """Draw ``fig`` once, recording every text the renderer is asked to draw; returns them and it."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    seen: dict[int, Text] = {}
    original = renderer.draw_text

    def record(gc: Any, x: float, y: float, s: str, prop: Any, angle: float, ismath: Any = False,
               mtext: Text | None = None) -> None:  # fmt: skip
        if mtext is not None and s.strip():
            seen.setdefault(id(mtext), mtext)
        original(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = record
    try:
        fig.draw(renderer)
    finally:
        del renderer.draw_text
    return list(seen.values()), renderer


def drawn_texts(fig: Figure) -> list[Text]:
    """The texts a full draw of ``fig`` puts on the canvas, in drawing order.

    Recorded from the renderer's own ``draw_text`` calls, so a tick label outside the axes'
    limits, a clipped annotation or a hidden legend (present among the figure's artists but
    never drawn) is not counted.
    """
    return _draw_recording(fig)[0]


def text_boxes(fig: Figure) -> list[TextBox]:
    """The drawn rectangle of every text of ``fig`` (titles, tick and axis labels, legends, data labels)."""
    texts, renderer = _draw_recording(fig)
    return [_box(t, renderer) for t in texts]


def overlapping_pairs(fig: Figure) -> list[tuple[Text, Text]]:
    """Pairs of drawn texts of ``fig`` whose rectangles overlap, as artists (to fix them)."""
    texts, renderer = _draw_recording(fig)
    boxes = [_box(t, renderer) for t in texts]
    # the axis-aligned extents first (cheap): rotated rectangles can only meet where those do
    reach = [(b.cx, b.cy, math.hypot(b.width, b.height) / 2) for b in boxes]
    return [
        (texts[i], texts[j])
        for i in range(len(boxes))
        for j in range(i + 1, len(boxes))
        if math.hypot(reach[i][0] - reach[j][0], reach[i][1] - reach[j][1]) < reach[i][2] + reach[j][2]
        and boxes[i].intersects(boxes[j])
    ]


def overlapping_texts(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of texts of ``fig`` whose drawn rectangles overlap (empty when every label is legible)."""
    return [(a.get_text(), b.get_text()) for a, b in overlapping_pairs(fig)]


def clipped_texts(fig: Figure) -> list[str]:
    """Texts of ``fig`` that run past the edge of the canvas (cut off in the saved image)."""
    texts, renderer = _draw_recording(fig)
    width, height = fig.canvas.get_width_height()
    out = []
    for t in texts:
        box = t.get_window_extent(renderer)
        if box.x0 < -_TOLERANCE_PX or box.y0 < -_TOLERANCE_PX or box.x1 > width + 1 or box.y1 > height + 1:
            out.append(t.get_text())
    return out


def _overflow(fig: Figure) -> tuple[float, float]:
    """How far the drawn texts of ``fig`` reach past the canvas, across and up (pixels, 0 when inside)."""
    texts, renderer = _draw_recording(fig)
    width, height = fig.canvas.get_width_height()
    boxes = [t.get_window_extent(renderer) for t in texts]
    if not boxes:
        return 0.0, 0.0
    across = max(0.0, -min(b.x0 for b in boxes)) + max(0.0, max(b.x1 for b in boxes) - width)
    up = max(0.0, -min(b.y0 for b in boxes)) + max(0.0, max(b.y1 for b in boxes) - height)
    return float(across), float(up)


def fit_texts_to_canvas(fig: Figure) -> Figure:
    """Grow ``fig`` until every drawn text lies inside its canvas; returns ``fig``.

    A layout engine keeps tick labels, axis labels and legends beside the axes, but it cannot
    make an axes taller than the figure allows: when long tick labels stand upright below a
    short axes, the y label (centred on the axes and as long as its text) runs past the top and
    bottom of the canvas, and is cut off in the saved image. The figure is then enlarged by
    twice the overflow in that direction (a centred label gains only half of what the axes
    gain), and drawn again, until nothing is outside or :data:`_MAX_GROWTHS` is reached. Sized
    from the measured text, so it holds for any labels, however many or long. Figures whose
    texts fit are left as they are.

    Args:
        fig: A figure with a layout engine (constrained or tight), so that growing it grows its axes.
    """
    for attempt in range(_MAX_GROWTHS + 1):
        # a layout that collapses at this size is what growing fixes: warn only about the final size
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            across, up = _overflow(fig)
        if (across <= _TOLERANCE_PX and up <= _TOLERANCE_PX) or attempt == _MAX_GROWTHS:
            break
        width, height = fig.get_size_inches()
        grow = [2 * (d + _MARGIN_PX) / fig.dpi if d > _TOLERANCE_PX else 0.0 for d in (across, up)]
        fig.set_size_inches(width + grow[0], height + grow[1])
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return fig


def _pixel_box(bbox: Bbox, pad: float = 0.0) -> Bbox:
    return Bbox.from_extents(bbox.x0 - pad, bbox.y0 - pad, bbox.x1 + pad, bbox.y1 + pad)


def place_point_labels(
    ax: Axes,
    points: Sequence[tuple[float, float]],
    labels: Sequence[str],
    *,
    marker_radius_pt: float = 6.0,
    fontsize: float = 8.0,
) -> list[Text]:
    """Annotate each point with its label where it hides neither another label nor a marker.

    Candidate offsets around the point are tried nearest first (:data:`_OFFSETS_PT`); a candidate
    is taken when its rendered box stays inside the axes and clear of every marker and every
    label placed before it. Call it after the axes' limits are final: the positions are computed
    in display pixels.

    Args:
        ax: The axes (its figure is drawn once to measure text).
        points: Data coordinates of the labelled points.
        labels: One label per point.
        marker_radius_pt: Radius of the drawn markers, in points.
        fontsize: Label size, in points.

    Returns:
        The annotations, in the order of ``points``.
    """
    fig = ax.get_figure()
    renderer = renderer_of(fig)  # type: ignore[arg-type]
    scale = fig.dpi / 72.0  # type: ignore[union-attr]
    radius = marker_radius_pt * scale
    inside = ax.get_window_extent(renderer)
    centres = [ax.transData.transform(p) for p in points]
    taken: list[Bbox] = [Bbox.from_extents(x - radius, y - radius, x + radius, y + radius) for x, y in centres]
    placed: list[Text] = []
    for (x, y), label in zip(points, labels, strict=True):
        note = None
        for dx, dy in _OFFSETS_PT:
            ha = "left" if dx > 0.5 else "right" if dx < -0.5 else "center"
            va = "bottom" if dy > 0.5 else "top" if dy < -0.5 else "center"
            candidate = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                                    ha=ha, va=va, zorder=5)  # fmt: skip
            box = candidate.get_window_extent(renderer)
            fits = inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
            if fits and not any(box.overlaps(_pixel_box(t, 1.0)) for t in taken):
                note = candidate
                break
            candidate.remove()
        if note is None:
            # no free place in reach: beside the point, the last resort a crowded plot can offer
            note = ax.annotate(label, (x, y), xytext=(7, 0), textcoords="offset points", fontsize=fontsize,
                               va="center", zorder=5)  # fmt: skip
        # placed inside the axes by construction: the layout need not make room for it
        note.set_in_layout(False)
        taken.append(note.get_window_extent(renderer))
        placed.append(note)
    return placed
