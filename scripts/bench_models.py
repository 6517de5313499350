"""Throughput of the HF backend on the tiny offline model: samples/s at batch 1 and 8 (8 frames per sample); with
``--real ALIAS``, a real LM's CPU speed on each path.

What the tiny run measures is the backend's own overhead (processor, padding, generate loop), not a real model's
speed: the tiny model has 2 layers of width 64. Prints a markdown table; nothing is asserted.

``--real smollm2-135m`` (or ``gemma3-270m``; docs/real_models.md) times the same text requests, greedy, three
ways on the same GGUF file: llama.cpp's own numbers (its server's ``timings``, one bare HTTP request each), our
OpenAI backend over HTTP to that server (a fresh server, so neither path reuses the other's prompt cache), and
our HF backend (transformers dequantises the GGUF to fp32). Generated tokens are the server's count for both
server paths (greedy on one server: the same replies) and the tokenizer's count of the reply for the HF path.

    python scripts/bench_models.py [--samples 16] [--new-tokens 256] [--frames 8] [--size 320x240]
    python scripts/bench_models.py --real smollm2-135m [--samples 8] [--new-tokens 64] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import docs_tables  # scripts/docs_tables.py (this folder is on sys.path when the script runs)
import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--arch", default="qwen2.5-vl", choices=["qwen2.5-vl", "qwen2-vl"])
    ap.add_argument("--real", choices=["smollm2-135m", "gemma3-270m"], default=None,
                    help="a real LM's tokens/s on llama.cpp, our OpenAI backend and our HF backend")
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    if a.real:
        import bench_real_models  # scripts/bench_real_models.py

        return bench_real_models.main(a)
    docs_tables.check(a, ["models"])
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    from ego_adr.models import Frames, GenerationConfig, Message, Request, load_model
    from ego_adr.models.tiny import build_tiny

    w, h = (int(x) for x in a.size.lower().split("x"))
    rng = np.random.default_rng(0)
    cfg = GenerationConfig(max_new_tokens=a.new_tokens)
    reqs = [
        Request([Message.user(Frames(rng.integers(0, 256, (a.frames, h, w, 3), dtype=np.uint8), fps=a.frames / 10),
                              "Describe what the person does in this step.")], cfg)
        for _ in range(a.samples)
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        folder = build_tiny(os.path.join(tmp, "m"), arch=a.arch)
        build_s = time.perf_counter() - t0
        for bs in a.batch_sizes:
            t0 = time.perf_counter()
            model = load_model(str(folder), device="cpu", batch_size=bs)
            load_s = time.perf_counter() - t0
            model.generate(reqs[:bs])  # warm-up
            t0 = time.perf_counter()
            out = model.generate(reqs)
            dt = time.perf_counter() - t0
            ok = sum(g.ok for g in out)
            new_tok = sum(len(model.tokenizer(g.text)["input_ids"]) for g in out if g.ok)
            rows.append((bs, a.samples, ok, dt, a.samples / dt, new_tok / dt, load_s))
    with docs_tables.Printed() as table:
        print(f"tiny {a.arch}, {a.frames} frames {w}x{h}, {a.new_tokens} new tokens, CPU threads "
              f"{torch.get_num_threads()}, build {build_s:.1f} s\n")
        print("| batch | samples | ok | seconds | samples/s | new tokens/s (approx.) | load s |")
        print("|---|---|---|---|---|---|---|")
        for bs, n, ok, dt, sps, tps, load_s in rows:
            print(f"| {bs} | {n} | {ok} | {dt:.2f} | {sps:.2f} | {tps:.0f} | {load_s:.2f} |")
    docs_tables.publish(a, {"models": table.text})


if __name__ == "__main__":
    main()
