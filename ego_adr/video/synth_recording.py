"""Synthetic multi-step *recordings* for the streaming monitor: one procedure, every step in sequence, some errors.

Why a second set beside the demo clips (:mod:`ego_adr.video.demo`): a streaming monitor watches a whole recording
and is scored on every annotated step of it, so here every performed step of a recording is annotated (the
EgoErrorVQA files annotate only a subset of each recording's steps) and omitted steps get the public data's
``-1``/``-1`` window. The scenes, objects and the renderer are the demo set's (same procedures under
``procedures/demo/``), so what is drawn defines the labels: a step done with another object is ``Wrong object``,
two steps swapped make the later-done one ``Wrong order``, a step never drawn is an ``Omission``.

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

VERSION = "1"

# (video_id, task_id, steps performed in order (1-based), object swaps per step) -- labels follow from these.
RECORDINGS: tuple[tuple[str, str, tuple[int, ...], dict[int, dict[str, str]]], ...] = (
    ("stream_tea_errors", "demo_make_tea", (1, 2, 3, 4, 5), {5: {"sugar": "salt"}}),  # WOb at 5, step 6 omitted
    ("stream_tea_correct", "demo_make_tea", (1, 2, 3, 4, 5, 6), {}),
    ("stream_cereal_order", "demo_make_cereal", (1, 3, 2, 4), {}),  # milk (3) before cereal (2): Wrong order at 3
)
DEFAULT_RECORDING = "stream_tea_errors"


def labels_for(steps: tuple[int, ...], swaps: dict[int, dict[str, str]], n_steps: int) -> dict[int, str]:
    """Step number -> option, from how the recording was made: a swapped object is ``Wrong object``; a step done
    while an earlier step of the procedure is still to come is ``Wrong order`` (the step done too early, as the
    demo set labels it); a step never performed is an ``Omission``; everything else is ``correct``."""
    out: dict[int, str] = {}
    for k, no in enumerate(steps):
        if swaps.get(no):
            out[no] = "Wrong object"
        elif any(m < no for m in steps[k + 1:]):
            out[no] = "Wrong order"
        else:
            out[no] = "correct"
    for no in range(1, n_steps + 1):
        out.setdefault(no, "Omission")
    return out


def _describe(label: str, step_text: str, swaps: dict[str, str]) -> str | None:
    step = step_text[0].lower() + step_text[1:]
    if label == "Wrong object":
        used = ", ".join(f"the {b} instead of the {a}" for a, b in swaps.items())
        return f"While trying to {step}, the person used {used}."
    if label == "Wrong order":
        return f"The person did this step ({step}) before an earlier step of the procedure."
    if label == "Omission":
        return f"The step was never done: {step}."
    return None


def _build(dest: Path) -> None:
    from ego_adr.video.demo import FPS, _render_run, _Run, load_procedures
    from ego_adr.video.synth import write_video

    procs = load_procedures()
    (dest / "annotations").mkdir(parents=True)
    vdir = dest / "videos" / "demo"
    vdir.mkdir(parents=True)
    records = []
    for video_id, task_id, steps, swaps in RECORDINGS:
        proc = procs[task_id]
        frames, windows = _render_run(_Run(video_id, task_id, list(steps), swaps, []), proc)
        write_video(vdir / f"{video_id}.mp4", frames, FPS, codec="h264", gop=FPS * 2)
        labels = labels_for(steps, swaps, len(proc["steps"]))
        for no in sorted(labels, key=lambda n: (windows[n][0] if n in windows else 1e9, n)):
            text = proc["steps"][no - 1]["text"]
            start, end = (round(windows[no][0], 3), round(windows[no][1], 3)) if no in windows else (-1, -1)
            records.append({"video_id": video_id, "task_id": task_id, "start_time": start, "end_time": end,
                            "action_annotation": text, "is_error": labels[no] != "correct",
                            "error_description": _describe(labels[no], text, swaps.get(no, {})),
                            "close_end_answer": [labels[no]]})
    ann = dest / "annotations"
    (ann / "procedure.json").write_text(json.dumps({k: v["procedure"] for k, v in procs.items()}, indent=1))
    (ann / "demo_answer.json").write_text(json.dumps(records, indent=1))


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
