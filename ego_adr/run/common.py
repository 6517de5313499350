"""What the multiple-choice and open-ended runners share: the run's samples, its model behind the stage cache, the
cache scope, and the one loop that decodes clips ahead of the model (:func:`decoded`). Kept apart from both runners
so neither imports the other."""

from __future__ import annotations

import contextlib
import platform
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

from ego_adr import __version__, store
from ego_adr.data import sources as source_registry
from ego_adr.data.sample import Sample
from ego_adr.errors import UserError
from ego_adr.models import loading
from ego_adr.models.loading import ModelSettings
from ego_adr.reasoning.clips import decode_fn, decode_item  # noqa: F401  (decode_item: re-exported)
from ego_adr.run.config import ConfigError, RunConfig
from ego_adr.store import write_json  # noqa: F401  (re-exported: the runners write their files with it)


def load_dataset(cfg: RunConfig) -> tuple[list[Sample], dict]:
    """The run's samples (sources, limit and shard applied) and a description of where they came from."""
    from ego_adr.data.egoerrorvqa import load_samples

    if cfg.data_root is None:
        from ego_adr.video.demo import ensure_demo

        root = ensure_demo()
        data_root, video_root = root / "annotations", root / "videos"
        sources = cfg.sources or ["demo"]
        origin = "embedded demo set"
    else:
        data_root = Path(cfg.data_root)
        video_root = Path(cfg.video_root) if cfg.video_root else None
        sources = cfg.sources or list(source_registry.default_sources(data_root))  # a built root's own sources
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
    """The model the run asks for (the embedded tiny model when none is named) behind the stage cache:
    :func:`ego_adr.models.loading.load_vlm` with the run's model settings, a failure as a :class:`ConfigError`.

    ``model``: an already constructed VLM to use instead (library use, benchmarks, tests with a model double).
    """
    settings = ModelSettings(**{f.name: getattr(cfg, f.name) for f in fields(ModelSettings)})
    try:
        return loading.load_vlm(settings, model)
    except UserError as e:
        raise ConfigError(str(e)) from None


def versions() -> dict:
    """The versions a run records (run.json ``versions``, the report's runtime line): the libraries that decide
    numbers (transformers, torch, torchvision, tokenizers, qwen-vl-utils, Pillow, the decoders; None when not
    installed), whether imported or not, plus the other imported modules of interest."""
    from ego_adr.models.compat import runtime_versions

    out = {"ego_adr": __version__, "python": sys.version.split()[0], "platform": platform.platform()}
    for mod in ("torch", "transformers", "sklearn", "decord", "av", "cv2", "a2a"):
        m = sys.modules.get(mod)
        if m is not None:
            out[mod] = getattr(m, "__version__", "?")
    out.update(runtime_versions())
    return out


def pipeline_fields(cfg: RunConfig) -> dict:
    """The PipelineConfig fields the run's protocol sets (:func:`ego_adr.reasoning.protocol.pipeline_fields`):
    Ego-ADR's own stages get the reply budget only when the user gave one (``--max-new-tokens``), not the one
    ``validate`` filled in from the protocol."""
    from ego_adr.reasoning.protocol import pipeline_fields as fields_of

    explicit = not (cfg.extra or {}).get("max_new_tokens_from")
    return fields_of(cfg.protocol_settings, cfg.max_new_tokens if explicit else None, cfg.data_root,
                     cfg.public_source)


@contextlib.contextmanager
def cache_scope(cfg: RunConfig):
    """``--cache-dir`` holds *every* cache for the duration of the run: the stage cache, probe verdicts and banks
    (given the folder explicitly) and the demo set, tiny models and tiny judges (found through
    :func:`ego_adr.store.cache_root`, which :func:`ego_adr.store.cache_scope` points at the folder)."""
    if not cfg.cache_dir:
        yield
        return
    with store.cache_scope(cfg.cache_dir):
        yield


def decoded(cfg: RunConfig, samples: list[Sample], needs_frames: bool = True, depth: int | None = None
            ) -> Iterator:
    """The one prefetch loop: each sample as a pipeline item with its frames (or the reason there are none), in
    order, decoded by background workers ``depth`` clips ahead of the model (``--prefetch``, ``--decode-workers``)
    with the run's protocol sampler. A broken decode *function* (a bug, not a video error) stops the run; the
    workers are stopped and the sampler closed however the loop ends (Ctrl-C included)."""
    from ego_adr.reasoning.protocol import make_sampler
    from ego_adr.video.prefetch import Prefetcher

    sampler = make_sampler(cfg.protocol_settings)
    pf = None
    try:
        pf = Prefetcher(decode_fn(sampler, cfg.frames, needs_frames), samples, workers=cfg.decode_workers,
                        depth=depth or cfg.prefetch)
        for result in pf:
            if result.error is not None:
                raise result.error
            item = result.value
            item.timings["decode_wait_s"] = round(result.waited, 4)
            yield item
    finally:
        if pf is not None:
            pf.close()
        sampler.close()
