"""Text layout of the figures: a check that no two labels collide or run off the canvas, and a fix.

Matplotlib places a text where it is told, whatever is already there. :func:`overlapping_texts`
therefore checks a finished figure from the rendered extents of its texts (what the Agg renderer
would draw, in display pixels), and :func:`fit_texts_to_canvas` grows a figure until none is cut
off. A figure is embedded in the report as a PNG, which a browser only scales as a whole, so a
figure free of overlaps here is free of them at any page width.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = [
    "TextBox",
    "clipped_texts",
    "drawn_texts",
    "fit_texts_to_canvas",
    "overlapping_pairs",
    "overlapping_texts",
]

#: boxes closer than this many pixels (at the figure's dpi) count as touching, not overlapping
_TOLERANCE_PX = 0.5
#: room left between the outermost text and the canvas edge when the figure is grown (pixels)
_MARGIN_PX = 4.0
#: a figure is grown at most this many times (each growth is one layout and one draw)
_MAX_GROWTHS = 6


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
