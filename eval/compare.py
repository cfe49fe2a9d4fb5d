"""``routerlab compare``: rates with CIs, latency and cost per run, and paired significance."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from eval.metrics import latency_summary, rate, usage_summary
from eval.stats import mcnemar_exact, paired_bootstrap_diff

__all__ = ["Comparison", "compare_runs", "render", "DEFAULT_COMPARE_SCORERS"]

DEFAULT_COMPARE_SCORERS = ("route", "ex", "chain_valid", "success")


@dataclass
class Comparison:
    """Per-run rows and pairwise tests (each run against the first one)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)


def _label(router: str) -> str:
    from routers import label

    return label(router)


def compare_runs(store: Any, run_ids: list[str], *, scorers: tuple[str, ...] = DEFAULT_COMPARE_SCORERS) -> Comparison:
    """Compare stored runs on their common examples.

    Pairwise tests pair each run with the first run given, on the example ids both have: McNemar's
    exact test on per-example correctness and a paired bootstrap CI of the rate difference.
    """
    results = {rid: store.results(rid) for rid in run_ids}
    out = Comparison()
    for rid, res in results.items():
        router = res[0].router if res else rid.rsplit(".", 1)[-1]
        lat = latency_summary(res)["end_to_end"]
        use = usage_summary(res)
        row: dict[str, Any] = {"run": rid, "router": _label(router), "lm": res[0].lm if res else "", "n": len(res)}
        for s in scorers:
            r = rate(res, s)
            row[s] = r.fmt()
            row[f"{s}_value"], row[f"{s}_ci"] = r.value, (r.ci_low, r.ci_high)
        row |= {"latency_p50_s": lat["p50"], "latency_p95_s": lat["p95"],
                "router_tokens_per_ex": use["router_tokens_per_ex"], "subagent_tokens_per_ex": use["subagent_tokens_per_ex"],
                "router_lm_calls_per_ex": use["router_lm_calls_per_ex"]}
        out.rows.append(row)
    if len(run_ids) > 1:
        base_id = run_ids[0]
        base = {(r.example_id, r.attempt): r for r in results[base_id]}
        for rid in run_ids[1:]:
            other = {(r.example_id, r.attempt): r for r in results[rid]}
            for s in scorers:
                keys = sorted(k for k in base.keys() & other.keys()
                              if base[k].value(s) is not None and other[k].value(s) is not None)
                a = [base[k].value(s) for k in keys]
                b = [other[k].value(s) for k in keys]
                mc = mcnemar_exact([x >= 1 for x in a], [y >= 1 for y in b])
                diff, low, high, _ = paired_bootstrap_diff(a, b) if keys else (math.nan,) * 4
                out.pairs.append({"a": base_id, "b": rid, "scorer": s, "n_common": len(keys), "diff": diff,
                                  "diff_ci": (low, high), "mcnemar_p": mc.p_value, "b01": mc.b01, "b10": mc.b10})
    return out


def _frames(c: Comparison) -> tuple[pd.DataFrame, pd.DataFrame]:
    cols = ["router", "lm", "n", *[k for k in c.rows[0] if k in DEFAULT_COMPARE_SCORERS or k in
            ("route", "ex", "chain_valid", "success", "trajectory")], "latency_p50_s", "latency_p95_s",
            "router_tokens_per_ex", "subagent_tokens_per_ex"] if c.rows else []
    main = pd.DataFrame(c.rows)[cols] if c.rows else pd.DataFrame()
    pairs = pd.DataFrame([
        {"compare": f"{p['b'].rsplit('.', 1)[-1]} vs {p['a'].rsplit('.', 1)[-1]}", "metric": p["scorer"], "n": p["n_common"],
         "diff": f"{p['diff']:+.2f} [{p['diff_ci'][0]:+.2f}, {p['diff_ci'][1]:+.2f}]" if p["n_common"] else "n/a",
         "mcnemar_p": round(p["mcnemar_p"], 4)}
        for p in c.pairs
    ])
    return main, pairs


def render(c: Comparison, fmt: str = "table") -> str:
    """Render as ``table`` (rich), ``markdown``, ``csv`` or ``json``."""
    main, pairs = _frames(c)
    if fmt == "json":
        return json.dumps({"runs": c.rows, "pairs": c.pairs}, indent=2, default=str)
    if fmt == "csv":
        return main.to_csv(index=False) + ("\n" + pairs.to_csv(index=False) if not pairs.empty else "")
    if fmt == "markdown":
        return main.to_markdown(index=False, floatfmt=".2f") + (
            "\n\nPaired differences (vs the first run):\n\n" + pairs.to_markdown(index=False) if not pairs.empty else "")
    if fmt == "table":
        from rich.console import Console
        from rich.table import Table

        buf = io.StringIO()
        console = Console(file=buf, width=200, force_terminal=False)
        t = Table(title="Router comparison (rates with 95% bootstrap CIs)")
        for col in main.columns:
            t.add_column(str(col))
        for _, r in main.iterrows():
            t.add_row(*[f"{v:.2f}" if isinstance(v, float) else str(v) for v in r.tolist()])
        console.print(t)
        if not pairs.empty:
            p = Table(title="Paired differences vs the first run (McNemar exact p)")
            for col in pairs.columns:
                p.add_column(str(col))
            for _, r in pairs.iterrows():
                p.add_row(*[str(v) for v in r.tolist()])
            console.print(p)
        return buf.getvalue()
    from agents.errors import ConfigError

    raise ConfigError(f"unknown format {fmt!r}", expected="table, markdown, csv or json", found=fmt,
                      fix="pass --format table|markdown|csv|json")
