"""People in the loop, first half: ``build review DIR`` writes the review sheet and a static page for reviewers.

``review/sheet.csv``: one line per pair (generated, and added ones after a merge), beside its segment (source,
task, step, window, labels with their provenance and the annotation's own labels, error description) and, for
each reviewer ``R`` (three by default, as the paper's annotators A, B, C), the columns ``R:decision`` (keep /
revise / remove), ``R:question``, ``R:answer`` (the revision), ``R:note`` and ``R:labels`` (a verdict on the LLM's
labels, first line of a segment: :mod:`.label_review`); for the one adder (``D`` by default, Appendix A) the
columns ``D:decision`` (``add``, on a new line), ``D:question``, ``D:answer``, ``D:note``. Every cell is filled
with what was imported before, so that a sheet exported again carries every earlier decision. ``review/index.html``: each segment with its step, error
description, a few frames of the segment (JPEGs under ``review/frames/``, when the video is found) and its pairs.
"""

from __future__ import annotations

import csv
import hashlib
import html
from pathlib import Path

from ego_adr.benchmark_builder import label_review
from ego_adr.benchmark_builder.merge import load_store

BASE = [
    "pair_id",
    "sample_id",
    "source",
    "task",
    "step",
    "start",
    "end",
    "labels",
    "label_provenance",
    "own_labels",
    "error_description",
    "provenance",
    "question",
    "answer",
]
FIELDS = ("decision", "question", "answer", "note")
REVIEWER_FIELDS = FIELDS + ("labels",)


def columns(reviewers: list[str], adder: str) -> list[str]:
    return BASE + [f"{r}:{x}" for r in reviewers for x in REVIEWER_FIELDS] + [f"{adder}:{x}" for x in FIELDS]


def _segment_cells(seg: dict) -> dict:
    r = seg["row"]
    return {
        "sample_id": seg["sample_id"],
        "source": r["source"],
        "task": r["task"],
        "step": r["step"],
        "start": "" if r["start"] is None else r["start"],
        "end": "" if r["end"] is None else r["end"],
        "labels": "|".join(r["labels"]),
        **label_review.cells(r),
        "error_description": r.get("description") or "",
    }


def sheet_rows(
    segments: list[dict], generated: dict[str, dict], store: dict, reviewers: list[str], adder: str = "D"
) -> list[dict]:
    """The sheet's lines: every generated and every added pair with the stored decisions and label verdicts."""
    verdicts = store.get("labels") or {}
    mine: dict[tuple[str, str], dict] = {
        (d["reviewer"], d["pair_id"]): d for d in store["decisions"].values()
    }
    added: dict[str, list[dict]] = {}
    for d in store["decisions"].values():
        if d["decision"] == "add":
            added.setdefault(d["sample_id"], []).append(d)
    lines = []
    for seg in segments:
        pairs = [
            (p["id"], p["question"], p["answer"], "llm")
            for p in generated.get(seg["sample_id"], {}).get("pairs", [])
        ]
        pairs += [
            (d["pair_id"], d["question"], d["answer"], "human-added") for d in added.get(seg["sample_id"], [])
        ]
        for i, (pid, q, a, prov) in enumerate(pairs or [("", "", "", "")]):
            line = {**_segment_cells(seg), "pair_id": pid, "provenance": prov, "question": q, "answer": a}
            for r in [*reviewers, adder]:
                d = mine.get((r, pid), {})
                for f in FIELDS:
                    line[f"{r}:{f}"] = d.get(f, "")
            for r in reviewers:
                v = verdicts.get(f"{r}\x1f{seg['sample_id']}") if i == 0 else None
                line[f"{r}:labels"] = "|".join(v["labels"]) if v else ""
            lines.append(line)
    return lines


def _frames(sample, out: Path, n: int, sampler) -> list[str]:
    """Relative paths of up to ``n`` JPEG frames of the segment ([] when the video cannot be read)."""
    import cv2

    if sample is None or not sample.video_path or not Path(sample.video_path).is_file():
        return []
    try:
        arr = sampler.sample(sample.video_path, sample.start, sample.end, n)
    except Exception:  # noqa: BLE001 - a reviewer page never fails on one video; the page says "no frames"
        return []
    tag = hashlib.sha1(sample.sample_id.encode()).hexdigest()[:12]
    names = []
    for i, frame in enumerate(arr):
        name = f"frames/{tag}_{i}.jpg"
        cv2.imwrite(str(out / name), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        names.append(name)
    return names


def _labels_html(r: dict) -> str:
    prov, own = r.get("label_provenance") or {}, r.get("own_labels") or []
    text = ", ".join(f"{x} ({prov[x]})" if prov.get(x) not in (None, "given") else x for x in r["labels"])
    return text + (f"; the annotation's own label(s): {', '.join(own)}" if own else "")


def _section(seg: dict, lines: list[dict], frames: list[str]) -> str:
    r, e = seg["row"], html.escape
    window = "whole recording" if r["start"] is None else f"{r['start']:.2f}-{r['end']:.2f} s"
    imgs = (
        "".join(f'<img src="{e(f)}" width="200">' for f in frames)
        or "<p><i>no frames (video not found)</i></p>"
    )
    rows = "".join(
        f"<tr><td><code>{e(x['pair_id'])}</code></td><td>{e(x['provenance'])}</td>"
        f"<td>{e(x['question'])}</td><td>{e(x['answer'])}</td></tr>"
        for x in lines
        if x["pair_id"]
    )
    return (
        f"<section><h2>{e(r['task'])} &middot; {e(r['recording'])} &middot; {window}</h2>"
        f"<p><b>Step:</b> {e(r['step'])}<br><b>Labels:</b> {e(_labels_html(r))}<br>"
        f"<b>Error description:</b> {e(r.get('description') or '-')}<br><code>{e(seg['sample_id'])}</code></p>"
        f"<div>{imgs}</div><table><tr><th>pair_id</th><th>provenance</th><th>question</th><th>answer</th></tr>"
        f"{rows or '<tr><td colspan=4><i>no generated pair: add some</i></td></tr>'}</table></section>"
    )


def write_review(
    out: Path,
    segments: list[dict],
    generated: dict[str, dict],
    reviewers: list[str],
    video_root: str | Path | None = None,
    n_frames: int = 4,
    adder: str = "D",
) -> dict:
    """Write ``review/sheet.csv`` and ``review/index.html`` (+ frames); returns their paths and counts."""
    from ego_adr.data.egoerrorvqa import load_samples
    from ego_adr.video.sampler import FrameSampler

    rdir = out / "review"
    (rdir / "frames").mkdir(parents=True, exist_ok=True)
    store = load_store(out)
    lines = sheet_rows(segments, generated, store, reviewers, adder)
    sheet = rdir / "sheet.csv"
    with sheet.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns(reviewers, adder))
        w.writeheader()
        w.writerows(lines)
    samples = (
        {s.sample_id: s for s in load_samples(out, task="multiple-choice", video_root=video_root)}
        if video_root
        else {}
    )
    sections, with_frames = [], 0
    with FrameSampler(max_side=320) as sampler:
        for seg in segments:
            frames = _frames(samples.get(seg["sample_id"]), rdir, n_frames, sampler)
            with_frames += bool(frames)
            sections.append(_section(seg, [x for x in lines if x["sample_id"] == seg["sample_id"]], frames))
    page = rdir / "index.html"
    page.write_text(
        "<!doctype html><meta charset=utf-8><title>Review of the generated QA pairs</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}section{border-top:1px solid "
        "#999;padding:8px}td,th{border:1px solid #ccc;padding:4px;vertical-align:top}</style>"
        f"<h1>Review: {html.escape(out.name)}</h1><p>Reviewers decide in <code>sheet.csv</code>, columns "
        f"{html.escape(', '.join(f'{r}:decision' for r in reviewers))} (keep / revise / remove), and may "
        "correct a label the LLM gave in their <code>:labels</code> column (first line of the segment). The "
        f"adder, {html.escape(adder)}, adds the pairs the model did not cover, on new lines with "
        f"<code>{html.escape(adder)}:decision</code> = <code>add</code>, among them the deliberately misleading "
        "questions about correct steps (paper Section 3.3, Appendix A). Then <code>python -m ego_adr.data build "
        "merge DIR SHEET.csv</code>.</p>" + "".join(sections),
        encoding="utf-8",
    )
    return {
        "sheet": str(sheet),
        "page": str(page),
        "lines": len(lines),
        "segments": len(segments),
        "segments_with_frames": with_frames,
    }
