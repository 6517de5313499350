"""Diagnostic (reads the TEST streams, after the final look; nothing is chosen from it): how well each monitor's
``p_error`` *ranks* the test steps (AUROC), and what the best threshold in hindsight would have scored -- an upper
bound that separates what is lost to the ranking from what is lost to the threshold chosen on validation. The run
is logged in NOTES.md like every look at test numbers.

    PYTHONPATH=$PWD python research/online_mistakes/diagnose.py --monitors stacked,graph
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from ego_adr.online_mistakes import cv  # noqa: E402
from research.online_mistakes.bench import DATASETS, STREAMS, run, training_set  # noqa: E402
from research.online_mistakes.monitors import build  # noqa: E402


def auroc(y: np.ndarray, s: np.ndarray) -> float:
    order = np.argsort(s, kind="stable")
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    for v in np.unique(s):  # ties share their mean rank
        ranks[s == v] = ranks[s == v].mean()
    pos = y == 1
    return float((ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--monitors", default="stacked")
    args = ap.parse_args()
    for bench in DATASETS:
        train = training_set(bench)
        for name in args.monitors.split(","):
            mon = build(name)
            mon.fit(train)
            for stream in STREAMS:
                m, rows = run(mon, bench, stream)
                y, p = np.array([r["label"] for r in rows]), np.array([r["p"] for r in rows])
                _, best = cv.best_threshold(y, p)
                print(f"{bench:14s} {stream:13s} {name:9s} AUROC {auroc(y, p):.3f}  chosen: macroF1 "
                      f"{100 * m['macroF1']:.1f} F1b {100 * m['F1b']:.1f}  | best threshold in hindsight: macroF1 "
                      f"{100 * best['macro_f1']:.1f} F1b {100 * best['balanced_f1']:.1f}")
    with open(HERE / "NOTES.md", "a") as f:
        f.write(f"- {datetime.datetime.now().isoformat(timespec='seconds')}: diagnostic (diagnose.py) of "
                f"{args.monitors}: test AUROC and hindsight-threshold bound; nothing chosen from it\n")


if __name__ == "__main__":
    main()
