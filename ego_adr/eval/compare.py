"""Paired comparison of two runs on the same samples: paired-bootstrap intervals of the metric differences and
McNemar's exact test on the per-sample hits (``python -m ego_adr.eval compare``). Kept apart from
:mod:`ego_adr.eval.stats` (resampling) because it scores rows through :mod:`ego_adr.eval.mc`, which itself uses
the resampling for its intervals."""

from __future__ import annotations

import numpy as np

from ego_adr.eval.mc import block, dedup_rows, outcome
from ego_adr.eval.scoring import screen_rows
from ego_adr.eval.stats import RATES, _boot_rates, _cell_arrays, _draws, _interval


def mcnemar_test(hit_a: list[bool], hit_b: list[bool]) -> dict:
    """McNemar's test on paired per-sample correctness (statsmodels), exact when discordant < 25."""
    from statsmodels.stats.contingency_tables import mcnemar  # noqa: PLC0415 -- slow import

    a = np.asarray(hit_a, dtype=bool)
    b = np.asarray(hit_b, dtype=bool)
    table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
    discordant = table[0][1] + table[1][0]
    exact = discordant < 25
    if discordant == 0:  # identical correctness: nothing to test (statsmodels would divide by zero)
        return {"table": table, "discordant": 0, "exact": True, "statistic": 0.0, "pvalue": 1.0}
    res = mcnemar(table, exact=exact, correction=True)
    return {"table": table, "discordant": discordant, "exact": exact,
            "statistic": float(res.statistic), "pvalue": float(res.pvalue)}


def compare_runs(rows_a: list[dict], rows_b: list[dict], *, n_boot: int = 1000, seed: int = 0) -> dict:
    """Paired comparison of two multiple-choice runs on the samples both contain (B - A).

    Returns the sample accounting (``n_common``, ``n_only_a``, ``n_only_b``), each run's metrics on the common
    samples, the differences with paired-bootstrap 95% intervals, and McNemar's test on correctness.
    Ground truth is taken from run A; samples whose ground truth differs between the files are counted in
    ``n_gt_mismatch`` (a sign that the two runs used different annotation files).
    """

    kept_a, scr_a = screen_rows(rows_a)  # screen first, then keep the last usable row per sample (as the metrics)
    kept_b, scr_b = screen_rows(rows_b)
    kept_a, kept_b = dedup_rows(kept_a), dedup_rows(kept_b)
    oa = {o["sample_id"]: o for o in map(outcome, kept_a)}
    ob = {o["sample_id"]: o for o in map(outcome, kept_b)}
    common = [s for s in oa if s in ob]
    gt_mismatch = sum(sorted(oa[s]["gt"]) != sorted(ob[s]["gt"]) for s in common)
    res: dict = {"n_common": len(common), "n_only_a": len(oa) - len(common), "n_only_b": len(ob) - len(common),
                 "n_gt_mismatch": gt_mismatch, "excluded": {"a": scr_a, "b": scr_b}}
    if not common:
        res.update(a=None, b=None, diff={}, ci95={}, mcnemar=None)
        return res
    la = [oa[s] for s in common]
    # B scored against A's ground truth, so both runs are judged on the same labels.
    lb = [{**ob[s], **_rescore(ob[s], oa[s]["gt"])} for s in common]
    ma, mb = block(la), block(lb)
    res["a"], res["b"] = ma, mb
    res["diff"] = {k: mb[k] - ma[k] for k in RATES}
    rng = np.random.default_rng(seed)
    draws = _draws(np.array([o["gt_error"] for o in la]), n_boot, rng)
    ba, bb = _boot_rates(_cell_arrays(la), draws), _boot_rates(_cell_arrays(lb), draws)
    res["ci95"] = {k: _interval(bb[k] - ba[k]) for k in RATES}
    res["mcnemar"] = mcnemar_test([o["hit"] for o in la], [o["hit"] for o in lb])
    res["bootstrap"] = {"n_boot": n_boot, "seed": seed, "paired": True}
    return res


def _rescore(o: dict, gt: list[str]) -> dict:
    if sorted(o["gt"]) == sorted(gt):
        return {}

    return outcome({"sample_id": o["sample_id"], "source": o["source"], "ground_truth": gt, "answer": o["answer"],
                    "answer_from": o["answer_from"], "failure": o["failure"]})


def format_comparison(res: dict, label_a: str = "A", label_b: str = "B") -> str:
    """Plain-text summary of :func:`compare_runs` (percent points)."""
    lines = [f"common samples: {res['n_common']}  only in {label_a}: {res['n_only_a']}  "
             f"only in {label_b}: {res['n_only_b']}  ground-truth mismatches: {res['n_gt_mismatch']}"]
    for side, label in (("a", label_a), ("b", label_b)):
        scr = (res.get("excluded") or {}).get(side) or {}
        for kind in ("excluded", "unscored"):
            k = scr.get(kind) or {}
            if k.get("n"):
                lines.append(f"{label}: {k['n']} rows {kind} ({', '.join(f'{r} {c}' for r, c in k['by_reason'].items())})"
                             f": {', '.join(k['ids'][:5])}{' ...' if len(k['ids']) > 5 else ''}")
    if not res["n_common"]:
        lines.append("no samples in common: nothing to compare")
        return "\n".join(lines)
    lines.append(f"{'metric':<14} {label_a:>8} {label_b:>8} {'B-A':>8}   95% CI (paired bootstrap)")
    for k in RATES:
        lo, hi = res["ci95"][k]
        lines.append(f"{k:<14} {100 * res['a'][k]:8.1f} {100 * res['b'][k]:8.1f} {100 * res['diff'][k]:+8.1f}"
                     f"   [{100 * lo:+.1f}, {100 * hi:+.1f}]")
    for k in ("tp", "fp", "tn", "fn", "n_failed", "n_unparseable"):
        lines.append(f"{k:<14} {res['a'][k]:8d} {res['b'][k]:8d} {res['b'][k] - res['a'][k]:+8d}")
    m = res["mcnemar"]
    kind = "exact binomial" if m["exact"] else "chi-square, continuity-corrected"
    lines.append(f"McNemar ({kind}) on correctness: {label_a}-only correct {m['table'][0][1]}, "
                 f"{label_b}-only correct {m['table'][1][0]}, statistic {m['statistic']:.3f}, p = {m['pvalue']:.4g}")
    return "\n".join(lines)
