"""Synthetic multi-step *recordings* for the streaming monitor: one procedure, every step in sequence, some errors.

Why a second set beside the demo clips (:mod:`ego_adr.video.demo`): a streaming monitor watches a whole recording
and is scored on every annotated step of it, so here every performed step of a recording is annotated (the
EgoErrorVQA files annotate only a subset of each recording's steps) and omitted steps get the public data's
``-1``/``-1`` window. The scenes, objects and the renderer are the demo set's (same procedures under
``procedures/demo/``), so what is drawn defines the labels (:data:`RECORDINGS`): every error type that can be
drawn, omissions in the middle and at the end, and correct recordings, each with every step annotated
(``annotations/stream_annotation.json`` says so, with each omitted step's expected time).

Layout (read by the ordinary EgoErrorVQA loader with source ``demo``)::

    annotations/procedure.json   annotations/demo_answer.json   videos/demo/{video_id}.mp4

Built once into ``<cache>/stream-demo-v{VERSION}`` (atomic, stamped like the demo set).
:func:`truncate_video` cuts a recording after a time by copying packets (no re-encoding), so a truncated file
decodes to exactly the same frames as the full one up to the cut -- what the no-look-ahead test needs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

VERSION = "2"

# A recording is a sequence of *events*: (step number 1-based, how it was done). "How": {} as the procedure says;
# {"swap": {a: b}} with object b instead of a (Wrong object); {"kind": "move"|"use"} with another action than
# the step's (Wrong action: e.g. the knife laid on the bread instead of cutting); {"no_effect": True} the action
# is carried out but leaves no effect (Equipment failure: the kettle pours nothing); {"redo": {a: b}} first with
# b, then again with a (Correct wrong action: one segment over both tries). A step number that comes back is an
# Unintended and unnecessary action; a step done while an earlier step is still to come is Wrong order; a step
# never done is an Omission. Every step of every recording is annotated (coverage "full"). "Others" has no
# drawable counterpart here.
RECORDINGS: tuple[tuple[str, str, tuple[tuple[int, dict], ...]], ...] = (
    ("stream_tea_errors", "demo_make_tea", ((1, {}), (2, {}), (3, {}), (4, {}), (5, {"swap": {"sugar": "salt"}}))),
    ("stream_tea_correct", "demo_make_tea", tuple((i, {}) for i in range(1, 7))),
    ("stream_cereal_order", "demo_make_cereal", ((1, {}), (3, {}), (2, {}), (4, {}))),  # milk before cereal
    ("stream_tea_skip", "demo_make_tea", ((1, {}), (2, {}), (4, {}), (5, {}), (6, {}))),  # no tea bag (mid)
    ("stream_tea_broken", "demo_make_tea", ((1, {}), (2, {}), (3, {}), (4, {"no_effect": True}), (5, {}), (6, {}))),
    ("stream_cereal_twice", "demo_make_cereal", ((1, {}), (2, {}), (2, {}), (3, {}), (4, {}))),
    ("stream_cereal_correct", "demo_make_cereal", tuple((i, {}) for i in range(1, 5))),
    ("stream_sandwich_action", "demo_make_sandwich", tuple((i, {"kind": "move"} if i == 6 else {})
                                                            for i in range(1, 7))),
    ("stream_sandwich_fixed", "demo_make_sandwich", tuple((i, {"redo": {"knife": "spoon"}} if i == 2 else {})
                                                           for i in range(1, 7))),
)
DEFAULT_RECORDING = "stream_tea_errors"
ANNOTATION_FILE = "stream_annotation.json"  # read by ego_adr.stream.episodes (coverage, omissions' times)


def labels_for(events: tuple[tuple[int, dict], ...], n_steps: int) -> tuple[list[str], dict[int, str]]:
    """(option of each event, {omitted step: "Omission"}), from how the recording was made (see
    :data:`RECORDINGS`); a step done while an earlier, not yet done step is still to come is ``Wrong order``
    (the step done too early, as the demo set labels it)."""
    labels, done = [], set()
    for k, (no, how) in enumerate(events):
        later = {m for m, _ in events[k + 1:]} - done
        if no in done:
            lab = "Unintended and unnecessary action"
        elif how.get("swap"):
            lab = "Wrong object"
        elif how.get("kind"):
            lab = "Wrong action"
        elif how.get("no_effect"):
            lab = "Equipment failure"
        elif how.get("redo"):
            lab = "Correct wrong action"
        elif any(m < no for m in later):
            lab = "Wrong order"
        else:
            lab = "correct"
        labels.append(lab)
        done.add(no)
    return labels, {no: "Omission" for no in range(1, n_steps + 1) if no not in done}


def _describe(label: str, step_text: str, how: dict) -> str | None:
    step = step_text[0].lower() + step_text[1:]
    swaps = how.get("swap") or how.get("redo") or {}
    used = ", ".join(f"the {b} instead of the {a}" for a, b in swaps.items())
    return {"Wrong object": f"While trying to {step}, the person used {used}.",
            "Wrong order": f"The person did this step ({step}) before an earlier step of the procedure.",
            "Omission": f"The step was never done: {step}.",
            "Wrong action": f"The person did not {step}: the object was only put down, not used.",
            "Equipment failure": f"The person tried to {step}, but it had no effect.",
            "Correct wrong action": f"The person first used {used}, then redid the step correctly: {step}.",
            "Unintended and unnecessary action": f"The person did this step again ({step}) though it was done."
            }.get(label)


def _render(task_id: str, events, proc: dict):
    """Frames and the (start, end) of every event, drawn with the demo set's scene."""
    from ego_adr.video.demo import _ACTS, _Scene

    scene = _Scene(task_id)
    scene.hold(1.0)
    spans = []
    for no, how in events:
        objs = list(proc["steps"][no - 1]["objects"])
        kind, fill = _ACTS[(task_id, no)]
        kind = how.get("kind", kind)
        fill = None if how.get("no_effect") or kind != _ACTS[(task_id, no)][0] else fill
        if how.get("redo"):
            s0, _ = scene.step(kind, [how["redo"].get(o, o) for o in objs], None)
            _, e = scene.step(kind, objs, fill)
            spans.append((s0, e))
            continue
        spans.append(scene.step(kind, [how.get("swap", {}).get(o, o) for o in objs], fill))
    scene.go(scene.REST, 1.0)
    return scene.frames, spans


def expected_times(events, spans, omitted: list[int], duration: float) -> dict[int, dict]:
    """When each omitted step should have begun (the end of the event before the one that went past it) and
    when its time had passed (``due``: the first later step began, or the recording ended)."""
    out = {}
    for no in omitted:
        nxt = next((k for k, (m, _) in enumerate(events) if m > no), None)
        if nxt is None:
            out[no] = {"expected_start": round(spans[-1][1], 3) if spans else 0.0, "due": round(duration, 3)}
        else:
            out[no] = {"expected_start": round(spans[nxt - 1][1], 3) if nxt else 0.0,
                       "due": round(spans[nxt][0], 3)}
    return out


def _build(dest: Path) -> None:
    from ego_adr.video.demo import FPS, load_procedures
    from ego_adr.video.synth import write_video

    procs = load_procedures()
    (dest / "annotations").mkdir(parents=True)
    vdir = dest / "videos" / "demo"
    vdir.mkdir(parents=True)
    records, coverage = [], {}
    for video_id, task_id, events in RECORDINGS:
        proc = procs[task_id]
        frames, spans = _render(task_id, events, proc)
        write_video(vdir / f"{video_id}.mp4", frames, FPS, codec="h264", gop=FPS * 2)
        labels, omitted = labels_for(events, len(proc["steps"]))
        when = expected_times(events, spans, sorted(omitted), len(frames) / FPS)
        rows = [(s, e, no, lab, how) for (s, e), (no, how), lab in zip(spans, events, labels, strict=True)]
        rows += [(-1, -1, no, "Omission", {}) for no in sorted(omitted)]
        for start, end, no, lab, how in rows:
            text = proc["steps"][no - 1]["text"]
            records.append({"video_id": video_id, "task_id": task_id, "start_time": round(start, 3),
                            "end_time": round(end, 3), "action_annotation": text, "is_error": lab != "correct",
                            "error_description": _describe(lab, text, how), "close_end_answer": [lab]})
        coverage[video_id] = {"coverage": "full", "omissions": {proc["steps"][no - 1]["text"]: w
                                                                for no, w in when.items()}}
    ann = dest / "annotations"
    (ann / "procedure.json").write_text(json.dumps({k: v["procedure"] for k, v in procs.items()}, indent=1))
    (ann / "demo_answer.json").write_text(json.dumps(records, indent=1))
    (ann / ANNOTATION_FILE).write_text(json.dumps(coverage, indent=1))


def _stamp() -> str:
    from ego_adr.video.demo import _fingerprint, load_procedures

    h = hashlib.sha256(f"{VERSION}|{_fingerprint(load_procedures())}|{RECORDINGS!r}".encode())
    return h.hexdigest()[:16]


def ensure_recordings(root: str | os.PathLike | None = None) -> Path:
    """Build the recording set once; return ``<root or cache>/stream-demo-v{VERSION}`` (idempotent, atomic)."""
    from ego_adr.video.demo import cache_root

    parent = Path(root) if root is not None else cache_root()
    final = parent / f"stream-demo-v{VERSION}"
    stamp = _stamp()
    if (final / "STAMP").is_file() and (final / "STAMP").read_text().strip() == stamp:
        return final
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f".stream-demo-v{VERSION}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _build(tmp)
        (tmp / "STAMP").write_text(stamp + "\n")
        if final.exists():
            old = parent / f".stream-demo-v{VERSION}.old{os.getpid()}"
            os.replace(final, old)
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp, final)
        except OSError:  # another process finished first
            if not ((final / "STAMP").is_file() and (final / "STAMP").read_text().strip() == stamp):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def recording_paths(root: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """``(data_root, video_root)`` of the built recording set."""
    r = ensure_recordings(root)
    return r / "annotations", r / "videos"


def truncate_video(src: str | os.PathLike, dst: str | os.PathLike, seconds: float) -> Path:
    """Copy the packets of ``src`` whose presentation time is below ``seconds`` into ``dst`` (no re-encoding).

    The recordings are written without B-frames (x264 ``ultrafast``), so packet order is display order and the
    copied file decodes to exactly the first frames of the original.
    """
    import av

    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(src)) as inp, av.open(str(dst), "w") as out:
        ist = inp.streams.video[0]
        ost = out.add_stream_from_template(ist)
        for pkt in inp.demux(ist):
            if pkt.dts is None:
                continue
            if pkt.pts is not None and float(pkt.pts * ist.time_base) >= seconds - 1e-9:
                break
            pkt.stream = ost
            out.mux(pkt)
    return dst
