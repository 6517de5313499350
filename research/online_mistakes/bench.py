"""Exploration harness for the step-stream monitors (research only; the package's harness and metrics are h2's).

Loads the training set and the three test streams of Assembly101-O / EPIC-Tent-O from a data root laid out as
``../shared/online-mistakes/``, streams a monitor through each test recording with the layer's
:func:`ego_adr.monitoring.monitor.run_episode`, and scores the flags with its own small scorer (PREGO's mistake
P/R/F1, TI-PREGO's Pb/F1b, DTGL's macro F1), written here independently of the package's metric functions.

Every call that reads a test file goes through :func:`test_streams`; the scripts that call it log what they
scored in ``NOTES.md`` (the rule: no setting is chosen by looking at these numbers).
"""

from __future__ import annotations

import json
from pathlib import Path

from ego_adr.monitoring.monitor import run_episode
from ego_adr.online_mistakes.types import StepContext, TrainingSet

ROOT = Path(__file__).resolve().parents[3] / "shared" / "online-mistakes"
DATASETS = {"assembly101-o": ("assembly101", "output_miniROAD_Assembly101-O.json"),
            "epic-tent-o": ("epic-tent", "output_miniROAD_Epic-tent-O.json")}
STREAMS = ("oracle", "oracle-merged", "miniroad")


def training_set(benchmark: str, root: Path = ROOT) -> TrainingSet:
    folder = DATASETS[benchmark][0]
    raw = json.loads((root / "dtgl" / folder / "train.json").read_text())
    tax = {int(k): v["name"] for k, v in raw["taxonomy"][folder].items()}
    videos = tuple(raw["annotations"])
    seqs = tuple(tuple(s["step_id"] for s in raw["annotations"][v]["segments"]) for v in videos)
    return TrainingSet(benchmark=benchmark, sequences=seqs, taxonomy=tax, videos=videos)


def test_streams(benchmark: str, stream: str, root: Path = ROOT) -> list[tuple[str, list[int]]]:
    """(video, step ids) per test recording; the last step of each is the mistake."""
    folder, pred_file = DATASETS[benchmark]
    if stream == "oracle":
        raw = json.loads((root / "dtgl" / folder / "test.json").read_text())
        return [(v, [s["step_id"] for s in a["segments"]]) for v, a in raw["annotations"].items()]
    raw = json.loads((root / "prego" / "predictions" / pred_file).read_text())
    key = "gt" if stream == "oracle-merged" else "pred"
    return [(v, [int(x) for x in d[key]]) for v, d in raw.items()]


def score(labels: list[int], flags: list[bool]) -> dict:
    tp = sum(1 for y, f in zip(labels, flags) if y and f)
    fp = sum(1 for y, f in zip(labels, flags) if not y and f)
    fn = sum(1 for y, f in zip(labels, flags) if y and not f)
    tn = len(labels) - tp - fp - fn

    def f1(p, r):
        return 2 * p * r / (p + r) if p + r else 0.0

    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    pos, neg = tp + fn, fp + tn
    pb = tp / (tp + fp * pos / neg) if tp + fp else 0.0
    p0 = tn / (tn + fn) if tn + fn else 0.0
    r0 = tn / (tn + fp) if tn + fp else 0.0
    return {"P": p, "R": r, "F1": f1(p, r), "Pb": pb, "F1b": f1(pb, r), "macroF1": (f1(p, r) + f1(p0, r0)) / 2,
            "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def run(monitor, benchmark: str, stream: str, root: Path = ROOT) -> tuple[dict, list[dict]]:
    """Stream ``monitor`` (already fitted) over one test stream: its scores and the per-step rows."""
    tax = training_set(benchmark, root).taxonomy
    labels, flags, rows = [], [], []
    for video, steps in test_streams(benchmark, stream, root):
        outs = run_episode(monitor, video, StepContext(benchmark, video, tax), steps)
        for i, (s, o) in enumerate(zip(steps, outs)):
            y = int(i == len(steps) - 1)
            f = bool(o.flagged) if o.flagged is not None else o.prob >= 0.5
            labels.append(y)
            flags.append(f)
            rows.append({"video": video, "index": i, "step_id": s, "label": y, "p": o.prob, "flagged": f,
                         "category": o.category})
    return score(labels, flags), rows
