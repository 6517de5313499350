"""Score our monitors on the TEST streams of both benchmarks, beside the published rows and the goal of issue 27.

This script reads the test files. Every run appends a line to the test-number log at the end of ``NOTES.md``
(when, which code, which monitors, what was chosen) -- the rule is that no setting is chosen by looking at these
numbers, and that every look is on record. Selection happens inside each monitor's ``fit`` on the training
recordings only.

    PYTHONPATH=$PWD python research/online_mistakes/evaluate.py --monitors graph,seq2seq,sgt,stacked --why "..."
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from research.online_mistakes.bench import DATASETS, STREAMS, run, training_set  # noqa: E402
from research.online_mistakes.monitors import MONITORS, build  # noqa: E402

#: The rows to beat (issue 27, "Done when"): DTGL Table 3 macro F1, TI-PREGO Table 2 F1b; by (dataset, input).
GOAL = {
    ("assembly101-o", "oracle"): {"macroF1": (75.9, "DO*"), "F1b": (74.7, "TI-PREGO")},
    ("epic-tent-o", "oracle"): {"macroF1": (64.1, "TGT-text*"), "F1b": (57.8, "TI-PREGO")},
    ("assembly101-o", "miniroad"): {"macroF1": (53.5, "DO+"), "F1b": (67.4, "TI-PREGO")},
    ("epic-tent-o", "miniroad"): {"macroF1": (46.5, "DO+"), "F1b": (34.6, "TI-PREGO")},
}


def _goal(bench: str, stream: str, m: dict) -> str:
    key = (bench, "miniroad" if stream == "miniroad" else "oracle")
    out = []
    for metric, (target, row) in GOAL[key].items():
        d = 100 * m[metric] - target
        out.append(f"{metric} {'+' if d >= 0 else ''}{d:.1f} vs {row}")
    return "; ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--monitors", default=",".join(MONITORS))
    ap.add_argument("--why", required=True, help="why these test numbers are looked at (goes into the log)")
    args = ap.parse_args()
    names = args.monitors.split(",")
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "--", "ego_adr", "research"],
                                capture_output=True, text=True).stdout.strip())
    results, chosen = [], {}
    for bench in DATASETS:
        train = training_set(bench)
        for name in names:
            mon = build(name)
            t = time.time()
            mon.fit(train)
            chosen[f"{bench}/{name}"] = mon.selection.get("chosen")
            for stream in STREAMS:
                m, _ = run(mon, bench, stream)
                results.append({"benchmark": bench, "stream": stream, "monitor": name} | m)
                print(f"{bench:14s} {stream:13s} {name:9s} P {100 * m['P']:5.1f} R {100 * m['R']:5.1f} "
                      f"F1 {100 * m['F1']:5.1f} Pb {100 * m['Pb']:5.1f} F1b {100 * m['F1b']:5.1f} "
                      f"macroF1 {100 * m['macroF1']:5.1f}   {_goal(bench, stream, m)}")
            print(f"{'':14s} (fit {time.time() - t:.1f}s; chosen {json.dumps(chosen[f'{bench}/{name}'])})")
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    out = HERE / "results" / f"test-{stamp.replace(':', '')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"when": stamp, "commit": commit, "dirty": dirty, "why": args.why,
                               "chosen": chosen, "results": results}, indent=1) + "\n")
    with open(HERE / "NOTES.md", "a") as f:
        f.write(f"- {stamp} commit {commit}{' (+ uncommitted changes)' if dirty else ''}: test numbers of "
                f"{', '.join(names)} on both datasets x {', '.join(STREAMS)}; why: {args.why}; "
                f"results/{out.name}\n")


if __name__ == "__main__":
    main()
