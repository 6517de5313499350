"""Streaming episodes from EgoErrorVQA annotations: one recording = one episode.

An episode's steps are its annotated segments in time order, each with its labels; samples without a segment
(CaptainCook4D omissions, ``-1``/``-1``) become the episode's task-end step, where an omission can be confirmed,
as in HelpMeOut's task-end step. Records of one clip that disagree (Epic-Tent holds a ``correct`` and an error
record for the same window) are merged: the segment is erroneous with the union of their error types.

**The benchmark annotates a subset of each recording's steps** (the developer split holds ~70% of the
samples, and the release itself covers only some steps of a recording): such recordings are marked
``annotation: "partial"``, and a "correct" one only means that its annotated segments are. Time between
annotated segments is unlabelled: an alarm there counts against nobody in M2 (no segment) but can be "early" in
M3. The synthetic recordings annotate every step (``"full"``); the evaluation reports them apart.
"""

from __future__ import annotations

import os

from ego_adr.data.window import window_problem
from ego_adr.taxonomy import CORRECT


def episode_key(sample) -> tuple[str, str, str]:
    return (sample.source, sample.task_id, sample.video_id)


def build_episodes(samples, annotation: dict | None = None) -> list[dict]:
    """Episodes (dicts, JSON-able) from multiple-choice :class:`~ego_adr.data.sample.Sample` s, in file order.

    ``annotation``: ``{video_id: {"coverage": "full", "omissions": {action: {"expected_start": a, "due": d}}}}``
    (the synthetic recordings write it, :mod:`ego_adr.video.synth_recording`). A recording is ``"full"`` only
    when that file says every step of it is annotated; every EgoErrorVQA recording is ``"partial"``. An omitted
    step's ``expected_start`` is when it should have begun, its ``due`` when its time had passed (the next
    step began, or the recording ended); without the file both are ``None`` (only the end can confirm it)."""
    annotation = annotation or {}
    groups: dict[tuple, list] = {}
    for s in samples:
        if s.task != "multiple-choice" or not s.ground_truth:
            continue
        groups.setdefault(episode_key(s), []).append(s)
    return [_episode(key, ss, annotation.get(key[2]) or {}) for key, ss in groups.items()]


def _episode(key: tuple[str, str, str], ss: list, meta: dict) -> dict:
    source, task_id, video_id = key
    segs: dict[tuple[float, float], dict] = {}
    omissions: dict[str, dict] = {}
    for s in ss:
        errs = [g for g in s.ground_truth if g != CORRECT]
        if window_problem(s.start, s.end):  # half or inverted windows: the one window rule refuses them
            continue
        if s.start is None and s.end is None:  # the data's "no segment" convention (e.g. omissions)
            if errs:
                when = (meta.get("omissions") or {}).get(s.action or "") or {}
                om = omissions.setdefault(s.action or s.sample_id, {
                    "action": s.action, "labels": [], "expected_start": when.get("expected_start"),
                    "due": when.get("due")})
                om["labels"] += [g for g in errs if g not in om["labels"]]
            continue
        seg = segs.setdefault((s.start, s.end), {"start": s.start, "end": s.end, "action": s.action,
                                                 "labels": [], "sample_ids": [], "description": None})
        if errs and s.reference and not seg["description"]:
            seg["description"] = s.reference  # the annotation's free text (never a label field)
        seg["sample_ids"].append(s.sample_id)
        for g in errs or [CORRECT]:
            if g not in seg["labels"]:
                seg["labels"].append(g)
    segments = sorted(segs.values(), key=lambda d: (d["start"], d["end"]))
    for seg in segments:
        if len(seg["labels"]) > 1 and CORRECT in seg["labels"]:
            seg["labels"].remove(CORRECT)  # one record says error: the segment is erroneous
        seg["error"] = seg["labels"] != [CORRECT]
    oms = list(omissions.values())
    end_labels = list(dict.fromkeys(g for om in oms for g in om["labels"]))
    cats = sorted({g for seg in segments for g in seg["labels"] if g != CORRECT} | set(end_labels))
    starts = [seg["start"] for seg in segments if seg["error"]] + [o["expected_start"] for o in oms
                                                                    if o["expected_start"] is not None]
    return {
        "id": f"{source}/{task_id}/{video_id}" if source == "egooops" else f"{source}/{video_id}",
        "source": source, "task_id": task_id, "video_id": video_id, "video_path": ss[0].video_path,
        "procedure": ss[0].procedure, "segments": segments, "omissions": oms, "end_labels": end_labels,
        "annotation": "full" if meta.get("coverage") == "full" else "partial",
        "correct": not cats, "categories": cats,
        "first_error_start": min(starts) if starts else None,
        "last_annotated_end": max((seg["end"] for seg in segments), default=0.0),
    }


def load_episodes(data_root, video_root, sources=None) -> list[dict]:
    import json
    from pathlib import Path

    from ego_adr.data.egoerrorvqa import load_samples
    from ego_adr.video.synth_recording import ANNOTATION_FILE  # optional, beside the answer files

    meta = Path(data_root) / ANNOTATION_FILE
    annotation = json.loads(meta.read_text()) if meta.is_file() else None
    return build_episodes(load_samples(data_root, "multiple-choice", sources=sources, video_root=video_root),
                          annotation)


def demo_episodes(cache_dir: str | os.PathLike | None = None) -> list[dict]:
    """The embedded synthetic recordings (:mod:`ego_adr.video.synth_recording`) as episodes."""
    from ego_adr.video.synth_recording import recording_paths

    data_root, video_root = recording_paths(cache_dir)
    return load_episodes(data_root, video_root, ["demo"])


def demo_episode(cache_dir: str | os.PathLike | None = None) -> dict:
    from ego_adr.video.synth_recording import DEFAULT_RECORDING

    return next(e for e in demo_episodes(cache_dir) if e["video_id"] == DEFAULT_RECORDING)
