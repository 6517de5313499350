"""What a step stream alone answers of EgoErrorVQA's CaptainCook4D questions: each multiple-choice sample
(``../shared/egoerrorvqa/captaincook4d_answer.json``: ``recording_id`` and ``step_id`` name the step, ``start_time`` its
window) answered from the recording's oracle step stream and its recipe's official graph, without the video.

**The rule** (:func:`answer`), fixed in advance, nothing chosen on these samples:

- the step is not in the recording's stream at the sample's time (no step of that id done in that window; an
  omission sample's window is the whole video, ``start_time`` -1): ``Omission``;
- the step is in the stream and the official graph says it came out of order (:mod:`.procedure`: done before a step
  it needs, or after one that needs it): ``Wrong order``;
- otherwise ``correct``.

``Wrong object``, ``Wrong action`` and the other options need the video: unanswerable by construction, so every
such sample is answered ``correct`` or by an order or omission it also has.

**Privileged**: the stream is the recording's *annotated* steps (the oracle), more than a model given the clip reads;
the row is labelled so, beside the majority answer of the same samples (``correct``). Both are scored by the
public evaluator's rule (:func:`ego_adr.eval.mc.compute_mc_metrics`, what ``python -m ego_adr.eval score`` runs) from
a predictions file of ordinary rows (``sample_id``, ``source``, ``ground_truth``, ``answer``).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from ego_adr.captaincook4d import graphs as G
from ego_adr.captaincook4d import sources as S
from ego_adr.captaincook4d.procedure import Tracker
from ego_adr.errors import UserError

WINDOW_SLACK = 0.5  # seconds: a sample's start_time and its step's start_time agree within this (they are copies)
METHOD = "procedure-no-video"
PRIVILEGED = "reads the recording's annotated steps (oracle step stream) and the recipe's official graph; no video"


def _order_flags(g: G.RecipeGraph, done: list[S.Step]) -> list[bool]:
    tr = Tracker(g)
    out = []
    for s in done:
        c = tr.observe(s.step_id)
        out.append(bool(c.early or c.late or c.unknown))
    return out


def answer(src: S.Sources, graphs: Mapping[str, G.RecipeGraph], recording: str, step_id: int, start: float) -> str:
    """The no-video answer for one sample (module docstring)."""
    rec = src.recordings[recording]
    done = S.time_order(rec)
    hit = [i for i, s in enumerate(done) if s.step_id == step_id and abs(s.start - start) <= WINDOW_SLACK]
    if not hit:
        return "Omission"
    return "Wrong order" if _order_flags(graphs[rec.recipe], done)[hit[0]] else "correct"


def predictions(egoerrorvqa_root: str | os.PathLike, data_root: str | os.PathLike) -> list[dict]:
    """One predictions row per CaptainCook4D multiple-choice sample, with the sample ids the project's loader gives
    (:func:`ego_adr.data.egoerrorvqa.load_samples`) and the answer of :func:`answer`."""
    from ego_adr.data.egoerrorvqa import load_samples

    src, graphs = G.data_root_graphs(data_root)
    path = Path(egoerrorvqa_root) / "captaincook4d_answer.json"
    records = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    if not isinstance(records, list):
        raise UserError(f"{path} not found or not a list of samples; pass the EgoErrorVQA annotation folder")
    samples = load_samples(egoerrorvqa_root, "multiple-choice", ["captaincook4d"])
    if len(samples) != len(records):
        raise UserError(f"{path}: {len(records)} records but the loader read {len(samples)} samples")
    rows = []
    for rec, smp in zip(records, samples):
        rid, sid = str(rec.get("recording_id")), rec.get("step_id")
        if rid not in src.recordings or not isinstance(sid, int) or str(smp.video_id) != rid:
            raise UserError(f"{path}: sample {smp.sample_id!r} names recording {rid!r} step {sid!r}, which "
                            f"{S.ERRORS} does not have")
        ans = answer(src, graphs, rid, sid, float(rec.get("start_time", -1)))
        rows.append({"sample_id": smp.sample_id, "source": "captaincook4d", "ground_truth": list(smp.ground_truth),
                     "answer": ans, "mode": METHOD, "privileged": PRIVILEGED})
    return rows


def majority(rows: list[dict]) -> list[dict]:
    """The same samples, each answered with the most frequent first ground-truth option of the samples."""
    top = Counter(r["ground_truth"][0] for r in rows if r["ground_truth"]).most_common(1)[0][0]
    return [{**r, "answer": top, "mode": "majority-answer", "privileged": None} for r in rows]


def write(rows: list[dict], path: str | os.PathLike) -> Path:
    """A predictions file the evaluator scores (``python -m ego_adr.eval score PATH``)."""
    from ego_adr.store import write_text

    p = Path(path)
    write_text(p, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return p
