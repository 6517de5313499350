"""Pipeline benchmarks (printed as markdown tables for the README).

1. Overlap: end-to-end seconds per sample with a fixed-latency model double on a generated 10-minute H.264
   video (long GOP, like the real datasets), many samples per video, decoding serial (in the caller's thread)
   vs in background workers. With overlap the wall time per sample should be about max(decode, model), not the
   sum.
2. The stage cache: model calls for the Table 6 grid plus the deep/shallow/CoT/direct modes on the demo set,
   without and with the cache, and for a second pass over the same grid.
3. Throughput with the tiny random model at batch 1 and 8 (real transformers path, CPU).

    python scripts/bench_pipeline.py [--samples 16] [--latency 0.25] [--frames 16] [--sections cache]

Each section's table is the docs block ``pipeline-<section>`` (``--write-docs``, scripts/docs_tables.py); the
cache section counts model calls (a model double answers), so it is no timing and can run on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import docs_tables  # scripts/docs_tables.py (this folder is on sys.path when the script runs)

SECTIONS = ("overlap", "cache", "tiny")


def _long_video(root: Path, minutes: float = 10.0) -> Path:
    from ego_adr.video.synth import make_test_video

    path = root / "bench_long_h264.mp4"
    if not path.exists():
        make_test_video(path, minutes * 60, fps=15, size=(640, 360), codec="h264", gop=225)
    return path


def _samples(video: Path, n: int, window: float = 30.0):
    from ego_adr.data.sample import Sample

    out = []
    step = (600.0 - window - 20.0) / max(1, n)  # spread the windows over the 10-minute video
    for i in range(n):
        start = 10.0 + i * step
        out.append(Sample("bench", "multiple-choice", f"bench/{i}", "bench", "Fill the kettle. Pour the water.",
                          "long", str(video), start, start + window, "Pour the water into the cup", "bench",
                          ["correct"]))
    return out


def bench_overlap(root: Path, n: int, latency: float, frames: int) -> str:
    from ego_adr.models.doubles import ScriptedModelDouble
    from ego_adr.run.config import RunConfig
    from ego_adr.run.runner import run_multiple_choice

    video = _long_video(root)
    rows = []
    dec_alone = None  # decode time measured without a model competing for the CPU (the serial run)
    for label, workers in (("serial decode", 0), ("background decode (1 worker)", 1), ("background decode (2 workers)", 2)):
        cfg = RunConfig(model="scripted-double", mode="direct", frames=frames, batch_size=1,
                        decode_workers=max(1, workers), prefetch=4, use_cache=False, cache_dir=str(root / "cache"),
                        output_dir=str(root / label))
        cfg = cfg.validate()
        # the serial baseline (decoding in the caller's thread, Prefetcher workers=0) is this benchmark's
        # reference point, not a user setting: --decode-workers rejects 0, so it is set after validation
        cfg.decode_workers = workers
        shutil.rmtree(cfg.output_dir, ignore_errors=True)  # measure a fresh run, never a resumed one
        model = ScriptedModelDouble(latency=latency)
        run_multiple_choice(cfg, Path(cfg.output_dir), _samples(video, n), {}, progress=False, model=model)
        # the processing loop (decode + model) per sample; scoring and plots at the end are not per-sample work
        wall = json.loads((Path(cfg.output_dir) / "run.json").read_text())["processing_s"] / n
        preds = [json.loads(x) for x in (Path(cfg.output_dir) / "predictions.jsonl").read_text().splitlines()]
        dec = sum(p["timings"]["decode_s"] for p in preds) / n
        mod = sum(p["timings"]["model_s"] for p in preds) / n
        dec_alone = dec if dec_alone is None else dec_alone
        rows.append(f"| {label} | {frames} | {dec * 1000:.0f} | {mod * 1000:.0f} | {wall * 1000:.0f} | "
                    f"{wall / max(dec_alone, mod):.2f} |")
    head = ("| decoding | frames | decode ms/sample (in this run) | model ms/sample | loop wall ms/sample | "
            "wall / max(decode alone, model) |\n|---|---:|---:|---:|---:|---:|")
    return head + "\n" + "\n".join(rows)


def bench_cache(root: Path, limit: int) -> str:
    from ego_adr.models.doubles import ScriptedModelDouble
    from ego_adr.run.experiments import run_experiment

    cells = [{"label": f"{m}_match-{a}_narr-{b}", "mode": m, "match": a, "narration": b}
             for m in ("deep", "shallow") for a in (True, False) for b in (True, False)]
    cells += [{"label": "cot", "mode": "cot"}, {"label": "direct", "mode": "direct"}]
    exp = {"name": "grid", "table": "table6", "base": {"model": "scripted-double"}, "cells": cells}
    lines = ["| grid pass | cells | model calls | cache hits |", "|---|---:|---:|---:|"]
    for old in ("nocache", "first", "second", "grid-cache", "grid-nocache"):  # a fresh grid and an empty cache
        shutil.rmtree(root / old, ignore_errors=True)
    for label, use_cache, sub in (("no cache", False, "nocache"), ("cache, first pass", True, "first"),
                                  ("cache, second pass", True, "second")):
        # the no-cache pass gets its own cache folder so that not even its procedure banks are reused later
        cache_dir = root / ("grid-cache" if use_cache else "grid-nocache")
        over = {"limit": limit, "cache_dir": str(cache_dir), "use_cache": use_cache}
        _, res = run_experiment(exp, over, root / sub, progress=False, model=ScriptedModelDouble())
        lines.append(f"| {label} | {len(res)} | {sum(r['model_calls'] for r in res)} | "
                     f"{sum(r['cache_hits'] for r in res)} |")
    return "\n".join(lines)


def bench_tiny(root: Path, n: int) -> str:
    import numpy as np

    from ego_adr.models import load_model
    from ego_adr.models.base import Frames, GenerationConfig, Message, Request
    from ego_adr.models.tiny import ensure_tiny

    rng = np.random.default_rng(0)
    lines = ["| batch | requests | samples/s |", "|---:|---:|---:|"]
    for bs in (1, 8):
        model = load_model(str(ensure_tiny()), device="cpu", batch_size=bs)
        reqs = [Request([Message.user(Frames(rng.integers(0, 255, (8, 240, 320, 3), dtype=np.uint8), fps=1.0),
                                      "Describe the video.")], GenerationConfig(max_new_tokens=32))
                for _ in range(n)]
        model.generate(reqs[:1])  # warm-up
        t0 = time.perf_counter()
        for i in range(0, n, bs):
            model.generate(reqs[i:i + bs])
        lines.append(f"| {bs} | {n} | {n / (time.perf_counter() - t0):.2f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samples", type=int, default=32)
    p.add_argument("--latency", type=float, default=0.25, help="model double seconds per request")
    p.add_argument("--frames", type=int, default=16)
    p.add_argument("--grid-limit", type=int, default=8)
    p.add_argument("--tiny-requests", type=int, default=16, help="tiny section: requests per batch size")
    p.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of {', '.join(SECTIONS)}")
    p.add_argument("--work-dir", help="keep generated videos and runs here (default: a temp folder)")
    docs_tables.add_flag(p)
    args = p.parse_args()
    wanted = [x.strip() for x in args.sections.split(",") if x.strip()]
    if not wanted or set(wanted) - set(SECTIONS):
        p.error(f"--sections {args.sections!r}: choose among {', '.join(SECTIONS)}")
    docs_tables.check(args, [f"pipeline-{x}" for x in wanted])
    root = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="ego_adr_bench_"))
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    titles = {
        "overlap": f"Decode/model overlap ({args.samples} 30-s windows of one 10-min 640x360 H.264 video, GOP 225; "
                   f"model double {args.latency * 1000:.0f} ms/request)",
        "cache": f"Model calls for an ablation grid on the demo set ({args.grid_limit} samples per cell)",
        "tiny": f"Tiny random Qwen2.5-VL, 8 frames 320x240, 32 new tokens, CPU ({args.tiny_requests} requests)",
    }
    run = {"overlap": lambda: bench_overlap(root, args.samples, args.latency, args.frames),
           "cache": lambda: bench_cache(root, args.grid_limit),
           "tiny": lambda: bench_tiny(root, args.tiny_requests)}
    blocks = {}
    for x in wanted:
        table = run[x]()
        with docs_tables.Printed() as printed:
            print(f"\n{titles[x]}:\n\n{table}")
        blocks[f"pipeline-{x}"] = printed.text
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    docs_tables.publish(args, blocks)


if __name__ == "__main__":
    main()
