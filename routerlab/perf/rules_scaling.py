"""``routerlab perf``'s rules-scaling section: one ``rules`` decision on the worst texts as they grow."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from routerlab.perf._common import PerfFigure
from routerlab.routers.rules import RulesRouter

__all__ = ["RULES_WORST_TEXTS", "rules_scaling"]


#: the texts that made the rules router quadratic (issue 50, item 6): each keyword was tried
#: against the whole rest of the text
RULES_WORST_TEXTS: dict[str, str] = {
    "select": "select ",
    "update": "update ",
    "mixed": "how many select from the areas update what is a certain ",
}


def rules_scaling(sizes: Sequence[int] = (16_000, 128_000), repeats: int = 3) -> list[PerfFigure]:
    """Seconds of one ``rules`` decision on the worst texts at each length, and their ratio.

    The ratio of the longest to the shortest is the figure to compare across machines: a
    linear router takes about ``sizes[-1] / sizes[0]`` times as long, a quadratic one its square
    (137 s for 128k characters before the fix). Best of ``repeats``, after one warm-up decision.
    """
    router = RulesRouter()
    figures: list[PerfFigure] = []
    growth = sizes[-1] / sizes[0]
    for label, text in RULES_WORST_TEXTS.items():
        router.match(text * 10)  # compiles the patterns and warms sqlglot
        seconds: list[float] = []
        for n in sizes:
            request = text * (n // len(text))
            best = math.inf
            for _ in range(repeats):
                t0 = time.perf_counter()
                router.match(request)
                best = min(best, time.perf_counter() - t0)
            seconds.append(best)
            figures.append(PerfFigure("rules scaling", f"{label!r} text, {n:,} characters", round(best, 4), "s"))
        ratio = seconds[-1] / max(seconds[0], 1e-6)
        figures.append(
            PerfFigure(
                "rules scaling",
                f"{label!r} text, {sizes[-1]:,} / {sizes[0]:,} characters",
                round(ratio, 1),
                "x",
                f"<= {2 * growth:g} (linear: {growth:g}, quadratic: {growth * growth:g})",
                ratio <= 2 * growth,
            )
        )
    return figures
