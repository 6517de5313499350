"""Ask Ego-ADR about one's own clips, with no dataset layout: a video, the procedure, the step that should happen.

Why a separate entry point: ``python -m ego_adr.run`` evaluates a benchmark (annotations, ground truth, metrics);
someone building an assistive agent first wants to point the method at *their* clip and see what it concludes
and why. This module builds a :class:`~ego_adr.data.sample.Sample` per clip (no label), decodes it with the
project's :class:`~ego_adr.video.sampler.FrameSampler`, runs the same :class:`~ego_adr.reasoning.pipeline.EgoADR`
as the benchmark runner, and returns the verdict with its evidence. Nothing here re-implements a stage.

A clip's problem (its video missing or unreadable, a window the window rule refuses) is that clip's recorded
failure; a mistake in the arguments (:class:`CheckError`) stops before any model is loaded.
"""

from __future__ import annotations

import csv
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from ego_adr.data.sample import MULTIPLE_CHOICE, Sample
from ego_adr.data.window import window_problem
from ego_adr.errors import UserError
from ego_adr.models.backends import BACKENDS
from ego_adr.models.loading import DEFAULT_GPU_MEMORY, ModelSettings, check_device, check_model_name, load_vlm
from ego_adr.reasoning.clips import decode_item
from ego_adr.store import check_writable_dir

DEMO_TOKENS = 64  # the embedded random tiny model never stops by itself (docs/architecture.md, "Demo budget")
PAPER_TOKENS = 256  # Appendix C


class CheckError(UserError):
    """A wrong argument or clips file: one line, exit 2."""


@dataclass
class Clip:
    video: str
    procedure: str
    step: str | None = None
    start: float | None = None
    end: float | None = None
    name: str | None = None


def read_procedure(value: str, base: Path | None = None) -> str:
    """``value`` is a path to a text file (relative to ``base`` if given) or the procedure text itself."""
    if not value or not str(value).strip():
        raise CheckError("the procedure is empty: pass --procedure FILE or --procedure \"step one. step two.\"")
    p = Path(value).expanduser()
    if base is not None and not p.is_absolute():
        p = base / p
    try:
        if len(str(value)) < 4096 and p.is_file():
            text = p.read_text(encoding="utf-8").strip()
            if not text:
                raise CheckError(f"procedure file {p} is empty")
            return text
    except OSError as e:
        raise CheckError(f"cannot read procedure file {p}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise CheckError(f"procedure file {p} is not UTF-8 text (a binary file?); pass a text file") from None
    text = str(value).strip()
    if not any(c.isspace() for c in text) and (p.suffix or "/" in text or "\\" in text) or (
            p.suffix.lower() in (".txt", ".md", ".json", ".yaml", ".yml") and "\n" not in text):
        raise CheckError(f"procedure file {p} not found (to give the procedure itself, pass its text)")
    return text


def _seconds(v, what: str) -> float | None:
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        raise CheckError(f"{what} must be a number of seconds, got {v!r}") from None


def read_clips(path: str | Path, procedure: str | None = None, step: str | None = None) -> list[Clip]:
    """Clips from a CSV (header row) or JSONL file with the fields ``video``, ``procedure``, ``step``, ``start``,
    ``end`` (and optional ``name``); ``procedure``/``step`` fall back to the command line's. Relative video and
    procedure paths are read relative to the clips file."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise CheckError(f"clips file {p} not found")
    base = p.parent
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CheckError(f"cannot read clips file {p}: {e}") from None
    if p.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        records = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise CheckError(f"{p} line {n} is not JSON ({e.msg}); one object per line") from None
                if not isinstance(rec, dict):
                    raise CheckError(f"{p} line {n} is not a JSON object")
                records.append(rec)
    else:
        records = list(csv.DictReader(text.splitlines()))
    if not records:
        raise CheckError(f"clips file {p} holds no clips")
    clips = []
    for n, r in enumerate(records, 1):
        r = {str(k).strip().lower(): v for k, v in r.items() if k is not None}
        if not r.get("video"):
            raise CheckError(f"{p} clip {n} has no 'video' (fields: video, procedure, step, start, end)")
        proc = r.get("procedure") or procedure
        if not proc:
            raise CheckError(f"{p} clip {n} has no 'procedure' and none was given with --procedure")
        video = Path(str(r["video"])).expanduser()
        clips.append(Clip(str(video if video.is_absolute() else base / video), read_procedure(str(proc), base),
                          (r.get("step") or step or None), _seconds(r.get("start"), f"clip {n} start"),
                          _seconds(r.get("end"), f"clip {n} end"), r.get("name") or None))
    return clips


def validate_window(start: float | None, end: float | None) -> None:
    problem = window_problem(start, end)
    if problem:
        raise CheckError(problem.replace("window: ", "--start/--end: ", 1))


def to_sample(clip: Clip, n: int = 0) -> Sample:
    """The clip as a pipeline sample: no ground truth; the task id is a hash of the procedure text, so the
    procedure bank of one procedure is built (and cached) once."""
    task_id = "check-" + hashlib.sha256(clip.procedure.encode()).hexdigest()[:12]
    stem = Path(clip.video).stem
    window = "whole" if clip.start is None and clip.end is None else f"{clip.start}-{clip.end}"
    return Sample(source="check", task=MULTIPLE_CHOICE, sample_id=clip.name or f"check/{n}/{stem}/{window}",
                  task_id=task_id, procedure=clip.procedure, video_id=stem, video_path=clip.video,
                  start=clip.start, end=clip.end, action=clip.step, action_field="step (given)" if clip.step
                  else "none (matched from the narration)")


def load_model(model: str | None, device: str, backend: str, frames: int, cache_dir: str | None,
               base_url: str | None = None):
    """The model behind the stage cache, exactly as ``python -m ego_adr.run`` loads it (the same checks of device,
    name and cache folder, the same memory budget), and the cache folder."""
    settings = ModelSettings(model=model, device=device, backend=backend, frames=frames, cache_dir=cache_dir,
                             batch_size=1, base_url=base_url, gpu_memory=DEFAULT_GPU_MEMORY if BACKENDS[backend].plans_memory else None)
    check_device(device, backend)
    cache = settings.resolved_cache_dir()
    check_writable_dir(cache, "--cache-dir" if cache_dir else "the cache folder ($EGO_ADR_CACHE or "
                       "~/.cache/ego_adr; choose another with --cache-dir)")
    check_model_name(model, backend)
    return load_vlm(settings), cache


def check_clips(clips: list[Clip], model=None, *, mode: str = "auto", frames: int = 8,
                max_new_tokens: int = PAPER_TOKENS, cache_dir: Path | None = None, sampler=None,
                info: dict | None = None) -> list[dict]:
    """One result per clip (see :func:`result_of`), in order. ``info``, when given, receives the route and the
    probe's evidence (``mode=auto``)."""
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
    from ego_adr.video.sampler import FrameSampler

    pipe = EgoADR(model, PipelineConfig(mode=mode, frames=frames, max_new_tokens=max_new_tokens),
                  cache_dir=cache_dir)
    if info is not None:
        info.update(route=pipe.route, probe=pipe.probe.to_dict() if pipe.probe else None)
    own = sampler is None
    sampler = sampler or FrameSampler()
    out = []
    try:
        for n, clip in enumerate(clips):
            sample = to_sample(clip, n)
            t0 = time.perf_counter()
            item = decode_item(sampler, sample, frames)
            row = pipe.process([item])[0]
            row["timings"]["total_s"] = round(time.perf_counter() - t0, 4)
            out.append(result_of(clip, row))
    finally:
        if own:
            sampler.close()
    return out


def result_of(clip: Clip, row: dict) -> dict:
    """The readable core of a pipeline row: verdict, matched step with its score, narration, evidence, timings."""
    stages = row.get("stages") or {}
    cls = stages.get("classification") or {}
    match = stages.get("match")
    return {
        "video": clip.video,
        "name": clip.name,
        "window": [clip.start, clip.end],
        "step": clip.step,
        "verdict": row.get("prediction"),
        "failure": row.get("failure"),
        "route": row.get("route"),
        "mode": row.get("mode"),
        "matched_step": None if not match else {
            "number": match["index"] + 1, "text": match["step"], "score": match["score"],
            "method": match["method"], "previous": match.get("previous"), "next": match.get("next")},
        "narration": stages.get("narration"),
        "evidence": {"method": cls.get("method"), "items": cls.get("evidence") or [], "scores": cls.get("scores")},
        "raw": row.get("raw"),
        "frames": row.get("frames_info") or {},
        "timings": row.get("timings") or {},
    }
