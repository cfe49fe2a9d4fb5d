"""``routerlab perf``'s decode-bound section: this machine's memory bandwidth against what a token costs.

Decoding on a CPU reads every weight once per forward pass, whatever the number of tokens in the
batch, so a token-by-token decode cannot beat ``read bandwidth / bytes per pass`` tokens per
second. The section measures the bandwidth (numpy streaming over a buffer far larger than the
caches, one thread and two), reads the bytes per pass from the model's GGUF header
(:mod:`routerlab.agents.lm.gguf`), and times forward passes of 1 to 9 tokens on the loaded model:
the one-token pass gives the decode rate printed beside the bound, and the wider passes show what
a batch costs beyond it (what speculative decoding verifies its drafts in). A pass that costs
nearly one more single pass per extra token is bound by arithmetic, not by memory.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.gguf import read_tensors
from routerlab.agents.lm.speculative import OFF, evaluate_batch, truncate_context
from routerlab.perf._common import PerfFigure

__all__ = ["decode_bound", "memory_bandwidth"]

_SECTION = "decode bound"


def memory_bandwidth(mb: int = 256, repeats: int = 5, threads: int = 2) -> dict[str, float]:
    """GB/s of this machine's memory: ``read`` (a reduction) and ``copy`` (read + write counted, as STREAM).

    Each of ``threads`` threads streams its share of one ``mb`` MB buffer (numpy releases the GIL
    for both); the best of ``repeats`` runs is kept, as a bound should be.
    """
    n = mb * (1 << 20) // 8
    src = np.ones(n)
    dst = np.empty_like(src)
    shares = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]

    def copy(share: tuple[int, int]) -> None:
        np.copyto(dst[share[0] : share[1]], src[share[0] : share[1]])

    def read(share: tuple[int, int]) -> None:
        src[share[0] : share[1]].max()

    best = {"read": 0.0, "copy": 0.0}
    with ThreadPoolExecutor(threads) as pool:
        for name, fn, factor in (("copy", copy, 2), ("read", read, 1)):
            for _ in range(repeats):
                t = time.perf_counter()
                list(pool.map(fn, shares))
                best[name] = max(best[name], factor * src.nbytes / (time.perf_counter() - t) / 1e9)
    return best


def _pass_seconds(llm: object, sizes: tuple[int, ...], rounds: int) -> dict[int, list[float]]:
    """Seconds of one forward pass of each batch size after a 256-token context, sizes interleaved."""
    text = "SELECT name, country FROM singer WHERE age > 30 ORDER BY age DESC; " * 40
    tokens = [int(t) for t in llm.tokenize(text.encode(), add_bos=False)]  # type: ignore[attr-defined]
    base = 256
    llm.reset()  # type: ignore[attr-defined]
    llm.eval(tokens[:base])  # type: ignore[attr-defined]
    seconds: dict[int, list[float]] = {s: [] for s in sizes}
    for r in range(rounds):
        # alternate the order: load from other processes falls on every size alike
        for size in sizes if r % 2 == 0 else sizes[::-1]:
            t = time.perf_counter()
            evaluate_batch(llm, tokens[base : base + size])
            seconds[size].append(time.perf_counter() - t)
            truncate_context(llm, base)
    llm.reset()  # type: ignore[attr-defined]
    return seconds


def decode_bound(
    spec: str = "local", rounds: int = 8, sizes: tuple[int, ...] = (1, 2, 3, 5, 9), mb: int = 256
) -> list[PerfFigure]:
    """Memory bandwidth, the model's bytes per pass, the bound they give and forward-pass costs by batch size.

    Args:
        spec: The ``--lm`` spec (the model figures need the embedded engine).
        rounds: Passes timed per batch size.
        sizes: Batch sizes timed; the first is the one-token pass the others are compared with.
        mb: Size of the buffer the bandwidth is measured over (far above the caches).
    """
    bandwidth = {threads: memory_bandwidth(mb, threads=threads) for threads in (1, 2)}
    read = max(b["read"] for b in bandwidth.values())
    figures = [
        PerfFigure(_SECTION, f"memory bandwidth, {name}, {threads} thread(s)", round(b[name], 1), "GB/s")
        for threads, b in bandwidth.items()
        for name in ("read", "copy")
    ]
    lm = resolve_lm(spec, cache=False, speculative=OFF)
    engine: Any = getattr(lm, "_engine_spec", None)  # the embedded engine, when the LM has one
    if not hasattr(engine, "model_path"):
        return [*figures, PerfFigure(_SECTION, "model figures skipped: not the embedded engine", 0, "")]
    per_pass = read_tensors(engine.model_path).bytes_per_pass
    bound = read * 1e9 / per_pass
    seconds = _pass_seconds(engine.llama(), sizes, rounds)
    one = statistics.median(seconds[sizes[0]])
    figures += [
        PerfFigure(_SECTION, "model bytes read per forward pass", round(per_pass / 1e6, 1), "MB"),
        PerfFigure(_SECTION, "bound: read bandwidth / bytes per pass", round(bound, 1), "tok/s"),
        PerfFigure(_SECTION, "measured: one-token passes (p50)", round(1 / one, 2), "tok/s"),
        PerfFigure(_SECTION, "measured share of the bound", round(1 / one / bound, 2), "share"),
    ]
    for size in sizes[1:]:
        cost = statistics.median(seconds[size]) / one
        figures.append(PerfFigure(_SECTION, f"{size}-token pass against a one-token pass (p50)", round(cost, 2), "x"))
    return figures
