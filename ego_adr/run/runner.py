"""Executes one run: samples -> (frames decoded ahead in the background) -> pipeline -> predictions.jsonl.

What it guarantees:
- nothing lost: every finished sample is appended (flushed, fsynced) to ``predictions.jsonl`` at once; a rerun
  into the same output folder skips finished samples, and when nothing is left it neither loads a model nor
  decodes a frame;
- overlap: clips for the next batches are decoded by background workers (bounded queue) while the model works,
  and decode and model seconds are recorded separately in every row;
- every model call goes through the stage cache, so a re-run or an ablation never pays twice for one call;
  ``run.json`` records ``model_calls`` and ``cache_hits`` (this invocation) and ``totals`` (all of them);
- a folder holds one run: its identity is checked before any work and a lock keeps out a second live run
  (:mod:`ego_adr.run.identity`); failures carry their kind and infrastructure ones are retryable
  (:mod:`ego_adr.run.failures`); ``--cache-dir`` holds every cache, the demo set and tiny models included.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from ego_adr import __version__
from ego_adr.data.sample import Sample
from ego_adr.models.backends import BACKENDS
from ego_adr.run.config import ALL_SOURCES, ConfigError, RunConfig


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
        sources = cfg.sources or list(ALL_SOURCES)
        origin = "EgoErrorVQA annotations"
    if cfg.video_root and cfg.data_root is None:
        video_root = Path(cfg.video_root)
    samples = load_samples(data_root, task=cfg.task, sources=sources, video_root=video_root)
    limit_note = None
    if cfg.limit:
        samples, limit_note = apply_limit(samples, cfg.limit)
    if cfg.num_shards > 1:
        # contiguous blocks keep the samples of one long video in one shard (its reader is reused)
        n = len(samples)
        lo, hi = n * cfg.shard_index // cfg.num_shards, n * (cfg.shard_index + 1) // cfg.num_shards
        samples = samples[lo:hi]
    info = {"origin": origin, "data_root": str(data_root), "video_root": str(video_root) if video_root else None,
            "sources": sources, "n_samples": len(samples)}
    if limit_note:
        info["limit_note"] = limit_note
    return samples, info


def apply_limit(samples: list[Sample], limit: int) -> tuple[list[Sample], str | None]:
    """``--limit N``: at most N samples *in total* (not N per source), dealt round robin over the sources in
    file order, so that every source is represented whenever N >= the number of sources. Returns the picked
    samples (in their original order) and a note when some source got none."""
    per: dict[str, list[Sample]] = {}
    for s in samples:
        per.setdefault(s.source, []).append(s)
    picked: set[int] = set()
    depth = 0
    while len(picked) < min(limit, len(samples)):
        for src in per:
            if depth < len(per[src]) and len(picked) < limit:
                picked.add(id(per[src][depth]))
        depth += 1
    chosen = [s for s in samples if id(s) in picked]
    left_out = [src for src in per if not any(s.source == src for s in chosen)]
    note = (f"--limit {limit} is a total over {len(per)} sources, so {', '.join(left_out)} got no sample"
            if left_out else None)
    return chosen, note


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
    # the backend's own settings (hf: frames, for which the memory planner sizes the pixel budget)
    kwargs.update({k: getattr(cfg, k) for k in BACKENDS[cfg.backend].settings})
    if cfg.backend == "openai" and cfg.extra.get("max_retries") is not None:
        kwargs["max_retries"] = cfg.extra["max_retries"]
    try:
        model = load_model(name, **{k: v for k, v in kwargs.items() if v is not None})
    except (ValueError, OSError, RuntimeError, ImportError) as e:  # a memory-plan refusal is a ValueError
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ConfigError(f"could not load model {cfg.model or name}: {first}") from None
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
        from ego_adr.run.failures import decode_error_text

        item.frames_error = decode_error_text(e)
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
    from ego_adr.run import runinfo
    from ego_adr.run.failures import summarise
    from ego_adr.run.identity import confirm, read_identity
    from ego_adr.store import JsonlStore

    out.mkdir(parents=True, exist_ok=True)
    store = JsonlStore(out / "predictions.jsonl")
    done = store.done_ids()
    pending = [s for s in samples if s.sample_id not in done]
    prev = runinfo.previous(out)
    started = datetime.now(timezone.utc).isoformat()
    run_info: dict = {"config": cfg.to_dict(), "identity": read_identity(out), "data": info, "versions": _versions(),
                      "started": started, "resumed_from": len(done), "dropped_bytes_on_repair": store.dropped_bytes}
    given_model, model = model, None
    t_start = time.perf_counter()
    try:
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
            # the second half of the folder's identity: what only the loaded model and its probe know
            confirm(out, {"model_fingerprint": model.fingerprint if model else None, "route": pipe.route})
            run_info["identity"] = read_identity(out)
            run_info["pipeline"] = {**pipe.describe(), "bank_model": bank_name}
            run_info["model"] = {"id": model.model_id, "fingerprint": model.fingerprint} if model else None
            runinfo.carry_over(run_info, prev)
            write_json(out / "run.json", run_info)
            t_loop = time.perf_counter()
            _process(pipe, cfg, pending, store, progress, tqdm)
            run_info["processing_s"] = round(time.perf_counter() - t_loop, 3)  # decode + model loop, no scoring
        runinfo.carry_over(run_info, prev)
        wanted = {s.sample_id for s in samples}
        rows = [r for r in store.rows() if r.get("sample_id") in wanted]
    finally:
        store.close()
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
    failures = summarise(rows)
    if failures["n_infrastructure"]:
        notes.append(f"{failures['n_infrastructure']} of {failures['n_rows']} samples failed on infrastructure "
                     "(model or decoder unreachable / out of memory); they count as failures here and are rerun "
                     "with --retry-failed.")
    if info.get("limit_note"):
        notes.append(info["limit_note"] + ".")
    write_report(metrics, out, title=title, notes=notes)
    stats = model.stats() if model is not None and hasattr(model, "stats") else {}
    this = {"started": started, "finished": datetime.now(timezone.utc).isoformat(), "processed": len(pending),
            "retried": info.get("retried", 0), "model_calls": getattr(model, "model_calls", 0),
            "cache_hits": getattr(model, "cache_hits", 0), "failed_calls": stats.get("failed_calls", 0),
            "retryable_failures": stats.get("retryable_failures", 0)}
    run_info.update({
        "finished": this["finished"],
        "wall_s": round(time.perf_counter() - t_start, 3),
        "n_rows": len(rows),
        "model_calls": this["model_calls"],
        "cache_hits": this["cache_hits"],
        "cache": stats or None,
        "failures": failures,
    })
    runinfo.close_invocation(run_info, prev, this)
    write_json(out / "run.json", run_info)
    return metrics


def _process(pipe, cfg: RunConfig, pending: list[Sample], store, progress: bool, tqdm) -> None:
    from ego_adr.reasoning.protocol import make_sampler, settings_of
    from ego_adr.video.prefetch import Prefetcher

    sampler = make_sampler(settings_of(cfg))
    decode = _decode(sampler, cfg.frames, pipe.needs_frames)
    bs = cfg.batch_size
    bar = tqdm(total=len(pending), desc=f"ego_adr {pipe.route}", unit="sample", disable=not progress)
    pf = None
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
        if pf is not None:
            pf.close()  # Ctrl-C: stop the decode workers before the process unwinds
        bar.close()
        sampler.close()


def _flush(pipe, batch, store, bar) -> None:
    from ego_adr.run.failures import mark

    t0 = time.perf_counter()
    rows = pipe.process(batch)
    wall = time.perf_counter() - t0
    for row in rows:
        row["timings"]["pipeline_s"] = round(wall / len(rows), 4)
        row["timings"]["model_s"] = round(sum(v for k, v in row["timings"].items() if k.startswith("model_")), 4)
        store.append(mark(row))
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


@contextlib.contextmanager
def cache_scope(cfg: RunConfig):
    """``--cache-dir`` holds *every* cache for the duration of the run: the stage cache, probe verdicts and banks
    (given the folder explicitly) and the demo set, tiny models and tiny judges (which find the cache through
    ``$EGO_ADR_CACHE``, set here and restored afterwards)."""
    if not cfg.cache_dir:
        yield
        return
    old = os.environ.get("EGO_ADR_CACHE")
    os.environ["EGO_ADR_CACHE"] = str(Path(cfg.cache_dir).expanduser())
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("EGO_ADR_CACHE", None)
        else:
            os.environ["EGO_ADR_CACHE"] = old


def execute(cfg: RunConfig, progress: bool = True, model=None, fresh: bool = False,
            retry_failed: bool = False) -> tuple[Path, dict]:
    """Validate, lock and claim the output folder, load the data, run, score.

    ``model``: a VLM to use instead of loading ``cfg.model``. ``fresh``: discard the folder's results first (the
    way out of an identity mismatch). ``retry_failed``: rerun the rows whose failure was infrastructure.
    Raises :class:`ConfigError` for a user mistake (before any work), :class:`ProbeUnreachable` when the routing
    probe cannot reach the model (nothing is recorded or cached).
    """
    from ego_adr.run.checks import check_model_name, check_writable_dir
    from ego_adr.run.failures import drop_retryable
    from ego_adr.run.identity import FolderLock, claim, run_identity

    cfg.validate()
    if model is None:
        check_model_name(cfg.model, cfg.backend)
    out = Path(cfg.output_dir) if cfg.output_dir else default_output_dir(cfg)
    if not cfg.output_dir:
        check_writable_dir(out, "the default output folder (choose another with --output-dir)")
    with cache_scope(cfg):
        samples, info = load_dataset(cfg)
        from ego_adr.reasoning.protocol import apply_to_samples, settings_of

        samples = apply_to_samples(samples, settings_of(cfg))  # the window and step text the protocol reads
        if info.get("limit_note"):
            logging.getLogger(__name__).warning("%s", info["limit_note"])
        if not samples:
            raise ConfigError(f"no samples to run (sources {info['sources']} under {info['data_root']})")
        with FolderLock(out):
            claim(out, run_identity(cfg, samples, info), fresh=fresh)
            info["retried"] = drop_retryable(out / "predictions.jsonl") if retry_failed else 0
            if cfg.task == "open-end":
                from ego_adr.run.open_end import run_open_end

                return out, run_open_end(cfg, out, samples, info, progress=progress, model=model)
            return out, run_multiple_choice(cfg, out, samples, info, progress=progress, model=model)
