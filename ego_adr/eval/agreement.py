"""Agreement between raters of open-ended answers (paper Section 6.5, Appendix F, Table 8).

The paper has three annotators score the same 170 answers on the 0-5 scale and reports pairwise Cohen's kappa,
their mean ("All" column: (0.716 + 0.771 + 0.646) / 3 = 0.711), Fleiss' kappa over the three, pairwise Pearson,
and the Pearson correlation between the majority-vote human consensus and each LLM judge (0.851 Qwen,
0.781 DeepSeek). :func:`agreement` computes all of these from a CSV with one column per rater.

* Raters: every column except an id column (``id``, ``sample_id``, ``item``, ``item_id``, ``response_id``, or
  the one named with ``id_column``). Ratings must be numbers (the 0-5 scale); rows with a missing rating are
  dropped and counted.
* ``humans``: the columns that form the human panel. When given, kappas and the consensus use only those
  columns, and every other column (the judges) is correlated with the consensus -- the paper's setting. When
  not given, all columns are raters.
* Consensus (>= 3 raters): the score given by most raters; when no score has a strict majority (all three
  differ, where the paper's annotators discussed the case) the median of the ratings stands in for the
  discussion, rounded down to a scale value.
Cohen's kappa is unweighted, as in the paper; Spearman is reported beside Pearson because the scale is ordinal.
"""

from __future__ import annotations

import csv
import itertools
from collections import Counter
from pathlib import Path

ID_COLUMNS = {"id", "sample_id", "item", "item_id", "response_id"}


def read_ratings(csv_path: str | Path, id_column: str | None = None) -> tuple[list[str], dict[str, list[float]], int]:
    """(ids, {rater: ratings}, rows dropped for a missing value) from a ratings CSV."""
    path = Path(csv_path)
    if not path.is_file():
        raise FileNotFoundError(f"ratings CSV not found: {path}")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields = list(reader.fieldnames or [])
        records = list(reader)
    if id_column is not None and id_column not in fields:
        raise ValueError(f"id column {id_column!r} not in {path} (columns: {fields})")
    idc = id_column or next((c for c in fields if c.strip().lower() in ID_COLUMNS), None)
    raters = [c for c in fields if c != idc]
    if len(raters) < 2:
        raise ValueError(f"{path}: need at least two rater columns, found {raters}")
    ids: list[str] = []
    data: dict[str, list[float]] = {r: [] for r in raters}
    dropped = 0
    for i, rec in enumerate(records):
        vals = [(rec.get(r) or "").strip() for r in raters]
        if any(v == "" for v in vals):
            dropped += 1
            continue
        try:
            nums = [float(v) for v in vals]
        except ValueError:
            raise ValueError(f"{path}: row {i + 2} has a non-numeric rating: {vals}") from None
        ids.append(rec[idc] if idc else str(i))
        for r, v in zip(raters, nums, strict=True):
            data[r].append(v)
    if len(ids) < 2:
        raise ValueError(f"{path}: fewer than two complete rows of ratings")
    return ids, data, dropped


def _as_label(x: float):
    return int(x) if float(x).is_integer() else x


def consensus(ratings: list[list[float]]) -> list[float]:
    """Majority vote per item over raters (``ratings[rater][item]``); median rounded down when none."""
    import numpy as np  # noqa: PLC0415

    out = []
    for item in zip(*ratings, strict=True):
        top, count = Counter(item).most_common(1)[0]
        out.append(float(top) if count * 2 > len(item) else float(np.floor(np.median(item))))
    return out


def _pair(x: list[float], y: list[float]) -> dict:
    from scipy.stats import pearsonr, spearmanr  # noqa: PLC0415
    from sklearn.metrics import cohen_kappa_score  # noqa: PLC0415

    out = {"cohen_kappa": float(cohen_kappa_score([_as_label(v) for v in x], [_as_label(v) for v in y]))}
    if len(set(x)) > 1 and len(set(y)) > 1:  # correlation undefined for a constant rater
        p, s = pearsonr(x, y), spearmanr(x, y)
        out.update(pearson=float(p.statistic), pearson_p=float(p.pvalue),
                   spearman=float(s.statistic), spearman_p=float(s.pvalue))
    else:
        out.update(pearson=None, pearson_p=None, spearman=None, spearman_p=None)
    return out


def agreement(csv_path: str | Path, *, humans: list[str] | None = None, id_column: str | None = None) -> dict:
    """All Table 8 coefficients for a ratings CSV (see module docstring for the conventions)."""
    import numpy as np  # noqa: PLC0415
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa  # noqa: PLC0415

    ids, data, dropped = read_ratings(csv_path, id_column)
    if humans:
        missing = [h for h in humans if h not in data]
        if missing:
            raise ValueError(f"--humans names columns not in the CSV: {missing} (columns: {list(data)})")
        panel = list(humans)
    else:
        panel = list(data)
    others = [c for c in data if c not in panel]
    pairs = {f"{a} vs {b}": _pair(data[a], data[b]) for a, b in itertools.combinations(panel, 2)}
    res: dict = {"n_items": len(ids), "n_dropped": dropped, "raters": panel, "others": others, "pairwise": pairs,
                 "mean_cohen_kappa": float(np.mean([p["cohen_kappa"] for p in pairs.values()])) if pairs else None}
    if len(panel) >= 2:
        table, _ = aggregate_raters(np.array([[_as_label(v) for v in data[r]] for r in panel]).T)
        res["fleiss_kappa"] = float(fleiss_kappa(table, method="fleiss"))
    if len(panel) >= 3:
        cons = consensus([data[r] for r in panel])
        res["consensus_vs"] = {c: _pair(cons, data[c]) for c in (*panel, *others)}
    return res


def format_agreement(res: dict) -> str:
    """Table 8 layout: coefficients as rows, rater pairs (and All) as columns; then consensus correlations."""
    pairs = list(res["pairwise"])
    head = ["Coefficient", *pairs, "All"]

    def f(v):
        return "-" if v is None else f"{v:.3f}"

    rows = [
        ["Cohen's Kappa", *[f(res["pairwise"][p]["cohen_kappa"]) for p in pairs], f(res["mean_cohen_kappa"])],
        ["Fleiss' Kappa", *["-"] * len(pairs), f(res.get("fleiss_kappa"))],
        ["Pearson", *[f(res["pairwise"][p]["pearson"]) for p in pairs], "-"],
        ["Spearman", *[f(res["pairwise"][p]["spearman"]) for p in pairs], "-"],
    ]
    lines = [f"{res['n_items']} items ({res['n_dropped']} rows dropped for a missing rating); "
             f"raters: {', '.join(res['raters'])}", "| " + " | ".join(head) + " |",
             "|---" + "|---:" * (len(head) - 1) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    if "consensus_vs" in res:
        lines += ["", "Majority-vote consensus of " + ", ".join(res["raters"]) + " vs each column:",
                  "| Column | Pearson | Spearman | Cohen's Kappa |", "|---|---:|---:|---:|"]
        for c, v in res["consensus_vs"].items():
            tag = "" if c in res["raters"] else " (not in the panel)"
            lines.append(f"| {c}{tag} | {f(v['pearson'])} | {f(v['spearman'])} | {f(v['cohen_kappa'])} |")
    return "\n".join(lines)
