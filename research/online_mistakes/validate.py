"""Fit every monitor of ours on each benchmark's training set and print what cross-validation chose and its
validation scores. Reads the training files only (never a test file): safe to run while designing.

    PYTHONPATH=$PWD python research/online_mistakes/validate.py [--monitors graph,seq2seq,sgt,stacked]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from research.online_mistakes.bench import DATASETS, training_set  # noqa: E402
from research.online_mistakes.monitors import MONITORS, build  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--monitors", default=",".join(MONITORS))
    args = ap.parse_args()
    for bench in DATASETS:
        train = training_set(bench)
        for name in args.monitors.split(","):
            mon = build(name)
            t = time.time()
            mon.fit(train)
            sel = mon.selection
            score = sel.get("cv_score") or sel["cv_scores"][sel["chosen"]["score"]]
            print(f"{bench:14s} {name:9s} fit {time.time() - t:5.1f}s  chosen {json.dumps(sel['chosen'])}")
            print(f"{'':25s}validation " + "  ".join(f"{k} {v:.3f}" for k, v in score.items() if k != "threshold"))


if __name__ == "__main__":
    main()
