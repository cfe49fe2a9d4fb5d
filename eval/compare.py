"""``routerlab compare``: stored runs side by side, with confidence intervals and paired tests.

One row per run: router, LM, number of results, each rate with its 95 % bootstrap CI
(``0.62 [0.51, 0.72]``), latency p50/p95, router and sub-agent tokens per example and LM calls
per example. Baseline routers (``oracle``, ``random``) are labelled ``(baseline)`` everywhere.

Paired significance: runs are compared on the examples both of them have, matched by
``(example_id, attempt)`` (the intersection; its size is reported as ``common``). For each rate
and pair of runs, with ``n`` the common examples the scorer applies to in both runs:

* McNemar's exact test on per-example correctness (a score of 1 counts as correct, anything
  lower as wrong, so for graded scorers such as ``chain_f1`` it tests "perfect" rates);
* a paired bootstrap of the mean difference ``second - first`` with its 95 % CI.

By default each run is paired with the first one given (``pairing="first"``: list the reference
router first); ``pairing="all"`` tests every pair.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from routerlab.agents.errors import ConfigError
from routerlab.eval.calibration import run_calibration
from routerlab.eval.metrics import Rate, rate
from routerlab.eval.result import ExampleResult
from routerlab.eval.stats import mcnemar_exact, paired_bootstrap_diff

__all__ = [
    "DEFAULT_COMPARE_SCORERS",
    "FORMATS",
    "Comparison",
    "PairTest",
    "RunRow",
    "compare_runs",
    "render",
]

DEFAULT_COMPARE_SCORERS: tuple[str, ...] = ("ex", "route", "chain_valid", "success")
FORMATS: tuple[str, ...] = ("table", "markdown", "csv", "json")
PAIRINGS: tuple[str, ...] = ("first", "all")

#: a value at least this close to 1 counts as correct for McNemar's test
_CORRECT = 1.0 - 1e-9


class _Store(Protocol):
    """What :func:`compare_runs` needs from a results store."""

    def runs(self) -> Any: ...

    def results(self, run_id: str) -> list[ExampleResult]: ...


@dataclass(frozen=True)
class RunRow:
    """One run's summary.

    Attributes:
        run_id / router / lm: The run and its components.
        label: The router's display name (``oracle (baseline)``).
        baseline: True for baseline routers.
        n: Results in the run (examples x attempts).
        rates: ``scorer -> Rate`` (mean over applicable examples, 95 % CI).
        latency_p50_s / latency_p95_s: End-to-end latency percentiles.
        router_tokens_per_ex / subagent_tokens_per_ex: Prompt + completion tokens per example.
        lm_calls_per_ex: LM calls (router and sub-agents) per example.
        calibration: ECE, mean confidence and reliability bins of the first route decisions
            (:func:`routerlab.eval.calibration.run_calibration`).
    """

    run_id: str
    router: str
    label: str
    baseline: bool
    lm: str
    n: int
    rates: dict[str, Rate]
    latency_p50_s: float
    latency_p95_s: float
    router_tokens_per_ex: float
    subagent_tokens_per_ex: float
    lm_calls_per_ex: float
    calibration: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PairTest:
    """A paired comparison of one rate between two runs.

    Attributes:
        run_a / run_b: The reference run and the compared run (``diff = b - a``).
        label_a / label_b: Their routers' display names.
        scorer: The rate compared.
        n_common: Examples (``example_id``, ``attempt``) present in both runs.
        n: Common examples the scorer applies to in both runs (the paired sample).
        rate_a / rate_b: Means over those ``n`` examples.
        diff / diff_low / diff_high: Mean paired difference and its 95 % bootstrap CI.
        bootstrap_p: Two-sided paired-bootstrap p-value.
        mcnemar_p: McNemar's exact two-sided p-value on correct (score 1) vs not.
        b01 / b10: Discordant pairs: a wrong and b right / a right and b wrong.
    """

    run_a: str
    run_b: str
    label_a: str
    label_b: str
    scorer: str
    n_common: int
    n: int
    rate_a: float
    rate_b: float
    diff: float
    diff_low: float
    diff_high: float
    bootstrap_p: float
    mcnemar_p: float
    b01: int
    b10: int


@dataclass
class Comparison:
    """Per-run rows and paired tests, ready to render."""

    runs: list[RunRow] = field(default_factory=list)
    pairs: list[PairTest] = field(default_factory=list)
    scorers: tuple[str, ...] = DEFAULT_COMPARE_SCORERS
    pairing: str = "first"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (NaN becomes None)."""
        runs = []
        for r in self.runs:
            d = asdict(r)
            d["rates"] = {s: asdict(v) for s, v in r.rates.items()}
            runs.append(d)
        return _no_nan(
            {
                "scorers": list(self.scorers),
                "pairing": self.pairing,
                "runs": runs,
                "pairs": [asdict(p) for p in self.pairs],
            }
        )


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_no_nan(v) for v in value]
    return value


# -- computing ---------------------------------------------------------------------------------


def _labels(routers: Sequence[str]) -> dict[str, tuple[str, bool]]:
    # imported here: the routers package pulls in DSPy, which `compare` alone does not need
    # until it runs
    from routerlab.routers import BASELINES, label

    return {r: (label(r), r in BASELINES) for r in routers}


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def _run_row(
    run_id: str,
    router: str,
    lm: str,
    label: tuple[str, bool],
    results: list[ExampleResult],
    scorers: Sequence[str],
) -> RunRow:
    latencies = [r.latency_s for r in results]
    return RunRow(
        run_id=run_id,
        router=router,
        label=label[0],
        baseline=label[1],
        lm=lm,
        n=len(results),
        rates={s: rate(results, s) for s in scorers},
        latency_p50_s=_percentile(latencies, 50),
        latency_p95_s=_percentile(latencies, 95),
        router_tokens_per_ex=_mean([r.router_usage.prompt_tokens + r.router_usage.completion_tokens for r in results]),
        subagent_tokens_per_ex=_mean(
            [r.subagent_usage.prompt_tokens + r.subagent_usage.completion_tokens for r in results]
        ),
        lm_calls_per_ex=_mean([r.router_usage.lm_calls + r.subagent_usage.lm_calls for r in results]),
        calibration=run_calibration(results),
    )


def _pair_tests(
    a: RunRow,
    b: RunRow,
    res_a: list[ExampleResult],
    res_b: list[ExampleResult],
    scorers: Sequence[str],
    n_resamples: int,
    seed: int,
) -> list[PairTest]:
    by_a = {(r.example_id, r.attempt): r for r in res_a}
    by_b = {(r.example_id, r.attempt): r for r in res_b}
    common = sorted(by_a.keys() & by_b.keys())
    tests = []
    for s in scorers:
        keys = [k for k in common if by_a[k].value(s) is not None and by_b[k].value(s) is not None]
        va = [float(by_a[k].value(s)) for k in keys]  # type: ignore[arg-type]
        vb = [float(by_b[k].value(s)) for k in keys]  # type: ignore[arg-type]
        if keys:
            mc = mcnemar_exact([v >= _CORRECT for v in va], [v >= _CORRECT for v in vb])
            diff, low, high, p_boot = paired_bootstrap_diff(va, vb, n_resamples=n_resamples, seed=seed)
            mc_p, b01, b10 = mc.p_value, mc.b01, mc.b10
        else:
            diff = low = high = p_boot = mc_p = math.nan
            b01 = b10 = 0
        tests.append(
            PairTest(
                run_a=a.run_id,
                run_b=b.run_id,
                label_a=a.label,
                label_b=b.label,
                scorer=s,
                n_common=len(common),
                n=len(keys),
                rate_a=_mean(va),
                rate_b=_mean(vb),
                diff=float(diff),
                diff_low=float(low),
                diff_high=float(high),
                bootstrap_p=float(p_boot),
                mcnemar_p=float(mc_p),
                b01=b01,
                b10=b10,
            )
        )
    return tests


def compare_runs(
    store: _Store,
    run_ids: Sequence[str],
    *,
    scorers: Sequence[str] = DEFAULT_COMPARE_SCORERS,
    pairing: str = "first",
    n_resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare stored runs: rates with CIs, latency and cost per run, paired tests between runs.

    Args:
        store: A :class:`~routerlab.eval.store.ResultsStore` (anything with ``runs()`` and ``results()``).
        run_ids: Runs to compare, in display order; the first is the reference for pairing.
        scorers: Rates to show and test.
        pairing: ``first`` (each run against the first) or ``all`` (every pair).
        n_resamples: Paired-bootstrap resamples.
        seed: Bootstrap seed (the same input always gives the same CIs).

    Raises:
        ConfigError: For no run ids, an unknown run or an unknown pairing.
    """
    if pairing not in PAIRINGS:
        raise ConfigError(
            f"unknown pairing {pairing!r}",
            expected=" or ".join(PAIRINGS),
            found=repr(pairing),
            fix="pairing='first' tests each run against the first; 'all' tests every pair",
        )
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        raise ConfigError(
            "nothing to compare",
            expected="one or more run ids",
            found="none",
            fix="pass run ids (SESSION.ROUTER) or a session id",
        )
    known = store.runs()
    meta = {row["run_id"]: row for row in known.to_dict("records")} if len(known) else {}
    missing = [r for r in ids if r not in meta]
    if missing:
        raise ConfigError(
            f"unknown run(s) {missing}",
            expected="run ids from the results store",
            found=f"latest runs: {list(meta)[-5:]}",
            fix="check the ids (routerlab compare SESSION lists a whole session) or the --store path",
        )
    labels = _labels([str(meta[r]["router"]) for r in ids])
    results = {r: store.results(r) for r in ids}
    rows = [
        _run_row(r, str(meta[r]["router"]), str(meta[r]["lm"]), labels[str(meta[r]["router"])], results[r], scorers)
        for r in ids
    ]
    if pairing == "first":
        pairs = [(rows[0], other) for other in rows[1:]]
    else:
        pairs = list(itertools.combinations(rows, 2))
    tests = [
        t for a, b in pairs for t in _pair_tests(a, b, results[a.run_id], results[b.run_id], scorers, n_resamples, seed)
    ]
    return Comparison(runs=rows, pairs=tests, scorers=tuple(scorers), pairing=pairing)


# -- rendering ---------------------------------------------------------------------------------


def _fmt_rate(r: Rate) -> str:
    if r.n == 0 or not math.isfinite(r.value):
        return "n/a"
    return f"{r.value:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"


def _fmt_num(value: float, digits: int = 2) -> str:
    return "-" if not math.isfinite(value) else f"{value:.{digits}f}"


def _fmt_p(p: float) -> str:
    if not math.isfinite(p):
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _fmt_diff(t: PairTest) -> str:
    if t.n == 0:
        return "n/a"
    return f"{t.diff:+.2f} [{t.diff_low:+.2f}, {t.diff_high:+.2f}]"


def _run_names(c: Comparison) -> list[str]:
    """Display names of the runs: the label, plus the run id when two runs share a router."""
    labels = [r.label for r in c.runs]
    return [r.label if labels.count(r.label) == 1 else f"{r.label} ({r.run_id})" for r in c.runs]


def _display_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    # short headers keep the table inside a terminal; the note below the table spells them out
    header = ["router", "lm", "n", *c.scorers, "p50 s", "p95 s", "router tok", "agent tok", "LM calls"]
    body = [
        [
            name,
            r.lm,
            str(r.n),
            *[_fmt_rate(r.rates[s]) for s in c.scorers],
            _fmt_num(r.latency_p50_s),
            _fmt_num(r.latency_p95_s),
            _fmt_num(r.router_tokens_per_ex, 0),
            _fmt_num(r.subagent_tokens_per_ex, 0),
            _fmt_num(r.lm_calls_per_ex, 1),
        ]
        for name, r in zip(_run_names(c), c.runs, strict=True)
    ]
    return header, body


def _display_pairs(c: Comparison) -> tuple[list[str], list[list[str]]]:
    names = dict(zip([r.run_id for r in c.runs], _run_names(c), strict=True))
    header = [
        "compared",
        "rate",
        "common",
        "n",
        "first",
        "second",
        "diff [95% CI]",
        "McNemar p",
        "b01/b10",
        "bootstrap p",
    ]
    body = [
        [
            f"{names[t.run_b]} vs {names[t.run_a]}",
            t.scorer,
            str(t.n_common),
            str(t.n),
            _fmt_num(t.rate_a),
            _fmt_num(t.rate_b),
            _fmt_diff(t),
            _fmt_p(t.mcnemar_p),
            f"{t.b01}/{t.b10}",
            _fmt_p(t.bootstrap_p),
        ]
        for t in c.pairs
    ]
    return header, body


def _pairs_note(c: Comparison) -> str:
    ref = "each run vs the first" if c.pairing == "first" else "every pair of runs"
    return (
        f"Paired on the examples both runs have ({ref}; 'common' counts them, 'n' those the rate applies "
        "to). diff = second - first with a 95% paired-bootstrap CI; McNemar exact test on score = 1; "
        "b01 = first wrong & second right, b10 = the reverse."
    )


_RUNS_NOTE = (
    "Rates with 95% bootstrap CIs; p50/p95: end-to-end latency in seconds; router tok, agent tok "
    "(sub-agents) and LM calls are per example."
)


def _markdown_table(header: list[str], body: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    align = ["---" if i < 2 else "---:" for i in range(len(header))]
    return "\n".join([line(header), "| " + " | ".join(align) + " |", *(line(b) for b in body)])


def _render_markdown(c: Comparison) -> str:
    header, body = _display_rows(c)
    parts = [_RUNS_NOTE, "", _markdown_table(header, body)]
    if c.pairs:
        p_header, p_body = _display_pairs(c)
        parts += ["", _pairs_note(c), "", _markdown_table(p_header, p_body)]
    return "\n".join(parts) + "\n"


def _render_table(c: Comparison, width: int | None) -> str:
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width or shutil.get_terminal_size((160, 24)).columns,
        force_terminal=False,
        color_system=None,
    )
    header, body = _display_rows(c)
    table = Table(title="Router comparison", caption=_RUNS_NOTE)
    # the router label and a rate with its CI read as one value: never cut or split them
    keep_whole = {"router", *c.scorers}
    for i, col in enumerate(header):
        table.add_column(
            col,
            justify="left" if i < 2 else "right",
            no_wrap=col in keep_whole,
            min_width=max(len(row[i]) for row in body) if col in keep_whole and body else None,
        )
    for row in body:
        table.add_row(*row)
    console.print(table)
    if c.pairs:
        p_header, p_body = _display_pairs(c)
        pairs = Table(title="Paired differences", caption=_pairs_note(c))
        for i, col in enumerate(p_header):
            pairs.add_column(col, justify="left" if i < 2 else "right")
        for row in p_body:
            pairs.add_row(*row)
        console.print(pairs)
    return buf.getvalue()


def _render_csv(c: Comparison) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    rate_cols = [f"{s}{suffix}" for s in c.scorers for suffix in ("", "_ci_low", "_ci_high", "_n")]
    writer.writerow(
        [
            "run_id",
            "router",
            "label",
            "baseline",
            "lm",
            "n",
            *rate_cols,
            "latency_p50_s",
            "latency_p95_s",
            "router_tokens_per_ex",
            "subagent_tokens_per_ex",
            "lm_calls_per_ex",
        ]
    )
    for r in c.runs:
        rates = [v for s in c.scorers for v in (r.rates[s].value, r.rates[s].ci_low, r.rates[s].ci_high, r.rates[s].n)]
        writer.writerow(
            _no_nan(
                [
                    r.run_id,
                    r.router,
                    r.label,
                    r.baseline,
                    r.lm,
                    r.n,
                    *rates,
                    r.latency_p50_s,
                    r.latency_p95_s,
                    r.router_tokens_per_ex,
                    r.subagent_tokens_per_ex,
                    r.lm_calls_per_ex,
                ]
            )
        )
    if c.pairs:
        # a second table after a blank line: read each with pandas.read_csv(..., nrows=/skiprows=)
        buf.write("\n")
        names = list(asdict(c.pairs[0]))
        writer.writerow(names)
        for t in c.pairs:
            writer.writerow(_no_nan(list(asdict(t).values())))
    return buf.getvalue()


def render(comparison: Comparison, fmt: str = "table", *, width: int | None = None) -> str:
    """Render a comparison.

    Args:
        comparison: From :func:`compare_runs`.
        fmt: ``table`` (rich, for terminals), ``markdown``, ``csv`` (the runs table, then a blank
            line and the pairs table, numbers unformatted) or ``json`` (everything, NaN as null).
        width: Terminal width for ``table`` (default: the current terminal's).

    Raises:
        ConfigError: For an unknown format.
    """
    if fmt == "json":
        return json.dumps(comparison.to_dict(), indent=2)
    if fmt == "csv":
        return _render_csv(comparison)
    if fmt == "markdown":
        return _render_markdown(comparison)
    if fmt == "table":
        return _render_table(comparison, width)
    raise ConfigError(
        f"unknown format {fmt!r}",
        expected=", ".join(FORMATS),
        found=repr(fmt),
        fix="pass --format table, markdown, csv or json",
    )
