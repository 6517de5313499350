"""Executes one run: samples -> (frames decoded ahead in the background) -> pipeline -> predictions.jsonl.

What it guarantees:
- nothing lost: every finished sample is appended (flushed, fsynced) to ``predictions.jsonl`` at once; a rerun
  into the same output folder skips finished samples, and when nothing is left it neither loads a model nor
  decodes a frame;
- overlap: clips for the next batches are decoded by background workers (bounded queue) while the model works,
  and decode and model seconds are recorded separately in every row;
- every model call goes through the stage cache, so a re-run or an ablation never pays twice for one call;
  ``run.json`` records ``model_calls`` and ``cache_hits``.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from ego_adr import __version__
from ego_adr.data.sample import Sample
from ego_adr.run.config import ConfigError, RunConfig


def load_dataset(cfg: RunConfig) -> tuple[list[Sample], dict]:
    """The run's samples (sources, limit and shard applied) and a description of where they came from."""
    from ego_adr.data.egoerrorvqa import load_samples

    if cfg.data_root is None:
        from ego_adr.data.demo import ensure_demo

        root = ensure_demo()
        data_root, video_root = root / "annotations", root / "videos"
        sources = cfg.sources or ["demo"]
        origin = "embedded demo set"
    else:
        data_root = Path(cfg.data_root)
        video_root = Path(cfg.video_root) if cfg.video_root else None
        sources = cfg.sources or ["captaincook4d", "epic_tent", "assembly101", "egooops"]
        origin = "EgoErrorVQA annotations"
    if cfg.video_root and cfg.data_root is None:
        video_root = Path(cfg.video_root)
    samples = load_samples(data_root, task=cfg.task, sources=sources, video_root=video_root)
    if cfg.limit:
        # the limit applies per source so that every source is represented in a short run
        per: dict[str, list[Sample]] = {}
        for s in samples:
            per.setdefault(s.source, []).append(s)
        k = max(1, -(-cfg.limit // max(1, len(per))))
        picked = {id(s) for v in per.values() for s in v[:k]}
        samples = [s for s in samples if id(s) in picked][: cfg.limit]
    if cfg.num_shards > 1:
        # contiguous blocks keep the samples of one long video in one shard (its reader is reused)
        n = len(samples)
        lo, hi = n * cfg.shard_index // cfg.num_shards, n * (cfg.shard_index + 1) // cfg.num_shards
        samples = samples[lo:hi]
    info = {"origin": origin, "data_root": str(data_root), "video_root": str(video_root) if video_root else None,
            "sources": sources, "n_samples": len(samples)}
    return samples, info


def load_vlm(cfg: RunConfig, model=None):
    """The model the run asks for (the embedded tiny model when none is named) behind the stage cache.

    ``model``: an already constructed VLM to use instead (library use, benchmarks, tests with a model double).
    """
    from ego_adr.models.cache import CachedModel, StageCache

    cache = StageCache(cfg.resolved_cache_dir() / "stage_cache.sqlite") if cfg.use_cache else None
    if model is not None:
        return CachedModel(model, cache, cfg.backend)
    from ego_adr.models import load_model

    name = cfg.model
    if name is None:
        from ego_adr.models.tiny import ensure_tiny

        name = str(ensure_tiny("qwen2.5-vl"))
    kwargs = dict(backend=cfg.backend, device=cfg.device, dtype=cfg.dtype, batch_size=cfg.batch_size,
                  max_pixels_per_frame=cfg.max_pixels_per_frame, gpu_memory=cfg.gpu_memory)
    if cfg.backend == "openai":
        kwargs["base_url"] = cfg.base_url
    if cfg.backend == "vllm":
        kwargs["tensor_parallel_size"] = cfg.tensor_parallel_size
    if cfg.backend == "hf":
        kwargs["frames"] = cfg.frames  # the memory planner sizes the pixel budget for this many frames
    model = load_model(name, **{k: v for k, v in kwargs.items() if v is not None})
    return CachedModel(model, cache, cfg.backend)


def _versions() -> dict:
    out = {"ego_adr": __version__, "python": sys.version.split()[0], "platform": platform.platform()}
    for mod in ("torch", "transformers", "sklearn", "decord", "av", "cv2", "a2a"):
        m = sys.modules.get(mod)
        if m is not None:
            out[mod] = getattr(m, "__version__", "?")
    return out


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str))
    tmp.replace(path)


def decode_item(sampler, sample: Sample, num_frames: int):
    """A pipeline :class:`~ego_adr.reasoning.pipeline.Item` with the sample's frames, or the reason there are none."""
    from ego_adr.reasoning.pipeline import Item

    item = Item(sample)
    if not sample.video_path:
        item.frames_error = "no video path (pass --video-root; see README 'Running a real model')"
        return item
    t0 = time.perf_counter()
    try:
        item.frames = sampler.sample_clip(sample.video_path, sample.start, sample.end, num_frames)
        info = getattr(item.frames, "info", None)
        item.frames_info = info.to_dict() if info is not None else {}
    except Exception as e:  # noqa: BLE001 -- any decoder failure is this sample's failure
        item.frames_error = f"{type(e).__name__}: {e}"
    item.timings["decode_s"] = round(time.perf_counter() - t0, 4)
    return item


def _decode(sampler, num_frames: int, needs_frames: bool):
    from ego_adr.data.egoerrorvqa import sample_problem
    from ego_adr.reasoning.pipeline import Item

    def fn(sample: Sample):
        problem = sample_problem(sample)
        if problem:
            item = Item(sample)
            item.failure = f"data: {problem}"
            return item
        return decode_item(sampler, sample, num_frames) if needs_frames else Item(sample)

    return fn


def run_multiple_choice(cfg: RunConfig, out: Path, samples: list[Sample], info: dict, progress: bool = True,
                        model=None) -> dict:
    from tqdm import tqdm

    from ego_adr.eval.mc import compute_mc_metrics
    from ego_adr.eval.report import write_metrics_json, write_report
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
    from ego_adr.store import JsonlStore

    out.mkdir(parents=True, exist_ok=True)
    store = JsonlStore(out / "predictions.jsonl")
    done = store.done_ids()
    pending = [s for s in samples if s.sample_id not in done]
    run_info: dict = {"config": cfg.to_dict(), "data": info, "versions": _versions(),
                      "started": datetime.now(timezone.utc).isoformat(), "resumed_from": len(done),
                      "dropped_bytes_on_repair": store.dropped_bytes}
    prev = out / "run.json"
    if prev.exists():
        try:
            run_info["previous"] = {k: v for k, v in json.loads(prev.read_text()).items() if k != "previous"}
        except json.JSONDecodeError:
            pass
    given_model, model = model, None
    t_start = time.perf_counter()
    if pending:
        from dataclasses import replace

        from ego_adr.reasoning.bank_model import bank_setup
        from ego_adr.reasoning.protocol import pipeline_fields

        bank_fields, bank_arg, bank_name = bank_setup(cfg, given_model is not None,
                                                      lambda name: load_vlm(replace(cfg, model=name)))
        pcfg = PipelineConfig(mode=cfg.mode, frames=cfg.frames, match=cfg.match, narration=cfg.narration,
                              narration_source=cfg.narration_source, seed=cfg.seed,
                              **{"bank_builder": cfg.bank_builder, **bank_fields}, **pipeline_fields(cfg))
        needs_model = not (cfg.narration_source == "reference" and cfg.mode == "shallow")  # keywords only
        model = load_vlm(cfg, given_model) if needs_model else None
        pipe = EgoADR(model, pcfg, cache_dir=cfg.resolved_cache_dir(), bank_model=bank_arg)
        run_info["pipeline"] = {**pipe.describe(), "bank_model": bank_name}
        run_info["model"] = {"id": model.model_id, "fingerprint": model.fingerprint} if model else None
        write_json(out / "run.json", run_info)
        t_loop = time.perf_counter()
        _process(pipe, cfg, pending, store, progress, tqdm)
        run_info["processing_s"] = round(time.perf_counter() - t_loop, 3)  # decode + model loop, no scoring
    rows = [r for r in store.rows() if r.get("sample_id") in {s.sample_id for s in samples}]
    metrics = compute_mc_metrics(rows)
    write_metrics_json(metrics, out)
    model_free = cfg.narration_source == "reference" and cfg.mode == "shallow"
    label = "no model" if model_free else (cfg.model or "embedded tiny model (random weights)")
    title = f"{label} - {cfg.mode} - {'reference narration' if model_free else f'{cfg.frames} frames'}"
    from ego_adr.reasoning.protocol import describe, report_notes, settings_of

    run_info["protocol"] = describe(cfg.protocol, settings_of(cfg))
    notes = report_notes(cfg.protocol, settings_of(cfg), info.get("sources"))
    if cfg.narration_source == "reference":
        notes.append("Diagnostic, tuned to annotation style, not an upper bound: narration replaced by the "
                     "annotations' reference descriptions, whose wording the shallow vocabularies were written "
                     "against "
                     "(CaptainCook4D errors[].description, EgoOops error_caption, the action text for correct "
                     "samples; never a label field), so only the classification stage is measured.")
    if cfg.model is None and not model_free:
        notes.append("Demo model has random weights: these numbers only show that the machinery works.")
    write_report(metrics, out, title=title, notes=notes)
    run_info.update({
        "finished": datetime.now(timezone.utc).isoformat(),
        "wall_s": round(time.perf_counter() - t_start, 3),
        "n_rows": len(rows),
        "model_calls": getattr(model, "model_calls", 0),
        "cache_hits": getattr(model, "cache_hits", 0),
        "cache": model.stats() if model is not None and hasattr(model, "stats") else None,
    })
    write_json(out / "run.json", run_info)
    store.close()
    return metrics


def _process(pipe, cfg: RunConfig, pending: list[Sample], store, progress: bool, tqdm) -> None:
    from ego_adr.reasoning.protocol import make_sampler, settings_of
    from ego_adr.video.prefetch import Prefetcher

    sampler = make_sampler(settings_of(cfg))
    decode = _decode(sampler, cfg.frames, pipe.needs_frames)
    bs = cfg.batch_size
    bar = tqdm(total=len(pending), desc=f"ego_adr {pipe.route}", unit="sample", disable=not progress)
    try:
        batch = []
        pf = Prefetcher(decode, pending, workers=cfg.decode_workers, depth=max(cfg.prefetch, bs))
        for result in pf:
            if result.error is not None:  # the decode function itself broke (not a video error): a bug, stop
                raise result.error
            item = result.value
            item.timings["decode_wait_s"] = round(result.waited, 4)
            batch.append(item)
            if len(batch) == bs:
                _flush(pipe, batch, store, bar)
                batch = []
        if batch:
            _flush(pipe, batch, store, bar)
    finally:
        bar.close()
        sampler.close()


def _flush(pipe, batch, store, bar) -> None:
    t0 = time.perf_counter()
    rows = pipe.process(batch)
    wall = time.perf_counter() - t0
    for row in rows:
        row["timings"]["pipeline_s"] = round(wall / len(rows), 4)
        row["timings"]["model_s"] = round(sum(v for k, v in row["timings"].items() if k.startswith("model_")), 4)
        store.append(row)
    bar.update(len(rows))


def default_output_dir(cfg: RunConfig) -> Path:
    name = (cfg.model or "tiny-demo").rstrip("/").split("/")[-1].lower()
    tag = f"{name}-{cfg.task}-{cfg.mode}-{cfg.frames}f"
    if not cfg.match:
        tag += "-nomatch"
    if not cfg.narration:
        tag += "-nonarr"
    if cfg.narration_source != "model":
        tag += f"-{cfg.narration_source}"
    from ego_adr.reasoning.protocol import run_folder_tag

    tag += run_folder_tag(cfg)
    if cfg.data_root is None:
        tag += "-demo"
    return Path("runs") / tag


def execute(cfg: RunConfig, progress: bool = True, model=None) -> tuple[Path, dict]:
    """Validate, load the data, run, score. ``model``: a VLM to use instead of loading ``cfg.model``."""
    cfg.validate()
    out = Path(cfg.output_dir) if cfg.output_dir else default_output_dir(cfg)
    samples, info = load_dataset(cfg)
    from ego_adr.reasoning.protocol import apply_to_samples, settings_of

    samples = apply_to_samples(samples, settings_of(cfg))  # the window and step text the protocol reads
    if not samples:
        raise ConfigError(f"no samples to run (sources {info['sources']} under {info['data_root']})")
    if cfg.task == "open-end":
        from ego_adr.run.open_end import run_open_end

        return out, run_open_end(cfg, out, samples, info, progress=progress, model=model)
    return out, run_multiple_choice(cfg, out, samples, info, progress=progress, model=model)
