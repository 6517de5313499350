"""Agreement statistics against direct scipy / sklearn / statsmodels calls on a generated ratings CSV."""

from __future__ import annotations

import csv
import itertools
import random
from collections import Counter

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from ego_adr.eval.agreement import agreement, consensus, format_agreement

HUMANS = ("A", "B", "C")


@pytest.fixture
def ratings_csv(tmp_path):
    """170 answers (paper Appendix F) scored 0-5 by three humans and two judges, plus one incomplete row."""
    rng = random.Random(11)
    rows = []
    for i in range(170):
        t = rng.randint(0, 5)
        noisy = [min(5, max(0, t + rng.choice([0, 0, 0, 1, -1]))) for _ in range(3)]
        judges = [min(5, max(0, t + rng.choice([0, 1, -1, 2]))) for _ in range(2)]
        rows.append([f"r{i}", *noisy, *judges])
    path = tmp_path / "ratings.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sample_id", *HUMANS, "qwen", "deepseek"])
        w.writerows(rows)
        w.writerow(["r170", 3, "", 4, 4, 4])
    return path, rows


def test_matches_library_calls(ratings_csv):
    path, rows = ratings_csv
    cols = {name: [r[k + 1] for r in rows] for k, name in enumerate([*HUMANS, "qwen", "deepseek"])}
    res = agreement(path, humans=list(HUMANS))
    assert res["n_items"] == 170 and res["n_dropped"] == 1 and res["others"] == ["qwen", "deepseek"]
    kappas = []
    for a, b in itertools.combinations(HUMANS, 2):
        p = res["pairwise"][f"{a} vs {b}"]
        k = cohen_kappa_score(cols[a], cols[b])
        kappas.append(k)
        assert p["cohen_kappa"] == pytest.approx(k)
        assert p["pearson"] == pytest.approx(pearsonr(cols[a], cols[b]).statistic)
        assert p["spearman"] == pytest.approx(spearmanr(cols[a], cols[b]).statistic)
    assert res["mean_cohen_kappa"] == pytest.approx(np.mean(kappas))
    table, _ = aggregate_raters(np.array([cols[h] for h in HUMANS]).T)
    assert res["fleiss_kappa"] == pytest.approx(fleiss_kappa(table))
    # consensus: majority of three, else the median (all three differ)
    cons = []
    for item in zip(*(cols[h] for h in HUMANS), strict=True):
        v, c = Counter(item).most_common(1)[0]
        cons.append(v if c >= 2 else sorted(item)[1])
    for j in ("qwen", "deepseek", "A"):
        assert res["consensus_vs"][j]["pearson"] == pytest.approx(pearsonr(cons, cols[j]).statistic)
    text = format_agreement(res)
    assert "| Cohen's Kappa |" in text and "A vs C" in text and "deepseek (not in the panel)" in text


def test_all_columns_are_raters_without_humans(ratings_csv):
    path, _ = ratings_csv
    res = agreement(path)
    assert res["raters"] == [*HUMANS, "qwen", "deepseek"] and len(res["pairwise"]) == 10 and res["others"] == []


def test_consensus_rule():
    assert consensus([[1, 2, 3], [1, 2, 4], [5, 3, 5]]) == [1.0, 2.0, 4.0]


def test_bad_csv(tmp_path):
    p = tmp_path / "one.csv"
    p.write_text("id,A\n1,3\n2,4\n")
    with pytest.raises(ValueError, match="at least two rater columns"):
        agreement(p)
    p.write_text("id,A,B\n1,3,x\n2,4,4\n")
    with pytest.raises(ValueError, match="non-numeric"):
        agreement(p)
    p.write_text("id,A,B\n1,3,3\n2,4,4\n")
    with pytest.raises(ValueError, match="not in the CSV"):
        agreement(p, humans=["A", "Z"])
    with pytest.raises(FileNotFoundError):
        agreement(tmp_path / "none.csv")
