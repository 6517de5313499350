"""Memory planner: will this model, at this many frames and this batch size, fit this GPU? And with what
per-frame pixel budget?

Why: the paper evaluates 7B/8B models with 8-32 frames on 24 GB GPUs ("if allowed by GPU memory", Section 4.3).
Qwen-VL processors keep a frame's native resolution up to a pixel cap, so visual tokens (and memory) grow with
frames x pixels; a run that dies of OOM after an hour is worse than one refused up front with the reason.

The estimate is analytic (no GPU needed), from the architecture's numbers:

* weights: parameters x bytes per parameter (bf16 = 2);
* visual tokens per sample: Qwen-VL: ceil(frames / temporal_patch) x pixels / (patch x merge)^2 (the video
  processor resizes each frame to at most ``pixels`` in whole 28x28 (Qwen2/2.5) or 32x32 (Qwen3) cells, every
  two frames share one temporal patch, 2x2 patches merge into one token); fixed-resolution families: a fixed
  count per frame;
* KV cache: 2 x layers x kv_heads x head_dim x bytes x (prompt + new tokens) x batch;
* activations, at the peak of whichever runs alone: the vision tower over all patches, or the language model's
  prefill over the whole prompt (per layer: about 6 hidden-sized and 3 MLP-sized tensors alive, plus a boolean
  attention mask S x S when a batch is padded); multiplied by ``ACT_SAFETY``;
* a fixed ``OVERHEAD_GIB`` for the CUDA context, cuBLAS workspaces and allocator slack.

The numbers are estimates, not measurements (this project's CI has no GPU); the HF backend logs the measured
peak (``torch.cuda.max_memory_allocated``) per batch on CUDA so the two can be compared.

    python -m ego_adr.models.memory_planner --model qwen2.5-vl --gpu-memory 24GB --frames 8 16 24 32
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ego_adr.errors import OneLineParser
from ego_adr.models.families.spec import Arch  # noqa: F401  (re-exported: what memory depends on)

GIB = 1 << 30
OVERHEAD_GIB = 1.5
ACT_SAFETY = 1.3
PROMPT_TEXT_TOKENS = 1024  # procedure + step context + taxonomy definitions: generous for Ego-ADR's prompts
NEW_TOKENS = 256  # paper Appendix C/H


def _known() -> dict[str, Arch]:
    """Hub id -> numbers, from the families (:mod:`ego_adr.models.families`), where each checkpoint's numbers
    sit beside its alias."""
    from ego_adr.models.families import FAMILIES

    return {h.hub_id: h.arch for f in FAMILIES.values() for h in f.hub if h.arch is not None}


def __getattr__(name: str):
    if name == "KNOWN":  # computed on first use: the families import this module for Arch
        return _known()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Per-frame pixel budgets searched, in merged-token cells per frame pair: the reference video cap of
# qwen-vl-utils is 768 cells (VIDEO_MAX_PIXELS = 768 x 28 x 28); below 16 cells (112x112 px) frames are useless.
MAX_CELLS = 768
MIN_CELLS = 16


@dataclass
class Estimate:
    frames: int
    pixels_per_frame: int | None
    visual_tokens: int  # per sample
    seq_len: int  # per sample, prompt incl. visual tokens
    weights_gib: float
    kv_gib: float
    act_gib: float
    overhead_gib: float

    @property
    def total_gib(self) -> float:
        return self.weights_gib + self.kv_gib + self.act_gib + self.overhead_gib


@dataclass
class Plan:
    model: str
    gpu_gib: float
    batch_size: int
    estimate: Estimate
    fits: bool
    reason: str = ""


def parse_memory(text: str) -> float:
    """'24GB', '24 GiB', '80G', '24' -> GiB. GPU makers' "24 GB" cards have 24 GiB, so GB is read as GiB."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(g|gb|gib|m|mb|mib|t|tb|tib)?\s*", text.lower())
    if not m:
        raise ValueError(f"cannot read GPU memory {text!r}; write e.g. 24GB, 40GiB or 81920MB")
    value, unit = float(m.group(1)), (m.group(2) or "gb")[0]
    return value * {"g": 1.0, "m": 1 / 1024, "t": 1024.0}[unit]


def arch_from_folder(folder: str | Path) -> Arch | None:
    """Architecture numbers from a local model folder's config.json, read by the folder's family (None for a
    family this project does not know)."""
    from ego_adr.models.families import family_for_model_type

    cfg_path = Path(folder) / "config.json"
    if not cfg_path.exists():
        return None
    cfg = json.loads(cfg_path.read_text())
    fam = family_for_model_type(cfg.get("model_type"))
    if fam is None:
        return None
    return fam.arch_from_config(cfg, _params_from_weights(Path(folder), cfg))


def _params_from_weights(folder: Path, cfg: dict) -> float:
    """Parameters (billions) from the weights' byte size and the stored dtype."""
    index = folder / "model.safetensors.index.json"
    if index.exists():
        total = json.loads(index.read_text()).get("metadata", {}).get("total_size")
    else:
        total = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    dtype = str(cfg.get("dtype") or cfg.get("torch_dtype") or (cfg.get("text_config") or {}).get("dtype") or "")
    per = 4 if "32" in dtype else 2
    return (total or 0) / per / 1e9


def estimate(arch: Arch, frames: int, pixels_per_frame: int | None, batch_size: int = 1,
             new_tokens: int = NEW_TOKENS, text_tokens: int = PROMPT_TEXT_TOKENS, dtype_bytes: int = 2) -> Estimate:
    """Peak GPU memory of one batch of ``batch_size`` samples with ``frames`` frames each (see module doc)."""
    b = dtype_bytes
    if arch.dynamic:
        cells = max(1, (pixels_per_frame or MAX_CELLS * arch.unit) // arch.unit)
        pairs = math.ceil(frames / arch.temporal_patch)
        visual = pairs * cells
        patches = visual * arch.merge**2
        pixel_values = patches * 3 * arch.temporal_patch * arch.patch**2 * (4 + b)  # fp32 from processor + cast
    else:
        visual = frames * arch.tokens_per_frame + (arch.tokens_per_clip if arch.tokens_per_frame else 0)
        patches = frames * (arch.patches_per_frame or 0)
        pixel_values = frames * 3 * 448 * 448 * (4 + b)
    seq = visual + text_tokens
    kv = 2 * arch.layers * arch.kv_heads * arch.head_dim * b * (seq + new_tokens) * batch_size
    vision = batch_size * (patches * (6 * arch.v_hidden + 3 * arch.v_intermediate) * b + pixel_values)
    llm = batch_size * seq * ((6 * arch.hidden + 3 * arch.intermediate) * b + (seq if batch_size > 1 else 0))
    act = ACT_SAFETY * max(vision, llm + batch_size * seq * arch.hidden * b)  # vision embeds stay alive
    return Estimate(frames, pixels_per_frame if arch.dynamic else None, visual, seq,
                    arch.params_b * 1e9 * b / GIB, kv / GIB, act / GIB, OVERHEAD_GIB)


def plan(model: str, arch: Arch, gpu_gib: float, frames: int, batch_size: int = 1, *,
         frame_size: tuple[int, int] | None = None, pixels: int | None = None, **kw) -> Plan:
    """Largest per-frame pixel budget (whole token cells, up to the reference cap) that fits, or a refusal.
    With ``pixels``, only that budget is checked."""
    if pixels is not None and arch.dynamic:
        e = estimate(arch, frames, pixels, batch_size, **kw)
        fits = e.total_gib <= gpu_gib
        why = "" if fits else (f"{frames} frames x batch {batch_size} at {pixels} pixels per frame need "
                               f"{e.total_gib:.1f} GiB (> {gpu_gib:.1f} GiB); lower the pixel budget")
        return Plan(model, gpu_gib, batch_size, e, fits, why)
    if arch.max_frames is not None and frames > arch.max_frames:
        e = estimate(arch, frames, None, batch_size, **kw)
        return Plan(model, gpu_gib, batch_size, e, False,
                    f"{model} takes at most {arch.max_frames} frames per clip, asked for {frames}")
    hi = MAX_CELLS
    if frame_size is not None and arch.dynamic:  # frames are never upscaled past their own size
        w, h = frame_size
        hi = max(MIN_CELLS, min(MAX_CELLS, round(w / arch.patch / arch.merge) * round(h / arch.patch / arch.merge)))
    candidates = range(hi, MIN_CELLS - 1, -1) if arch.dynamic else [0]
    best = None
    for cells in candidates:  # memory is monotone in cells: the first that fits is the largest
        e = estimate(arch, frames, cells * arch.unit if arch.dynamic else None, batch_size, **kw)
        if e.total_gib <= gpu_gib:
            best = e
            break
    if best is not None:
        return Plan(model, gpu_gib, batch_size, best, True)
    low = estimate(arch, frames, MIN_CELLS * arch.unit if arch.dynamic else None, batch_size, **kw)
    if low.weights_gib + low.overhead_gib > gpu_gib:
        why = (f"the weights alone need {low.weights_gib:.1f} GiB (+{low.overhead_gib:.1f} GiB CUDA overhead), "
               f"more than {gpu_gib:.1f} GiB; use a GPU with more memory, a smaller model or the vllm backend "
               "with tensor parallelism")
    else:
        what = f"{MIN_CELLS * arch.unit} pixels per frame" if arch.dynamic else "the model's fixed resolution"
        why = (f"{frames} frames x batch {batch_size} need {low.total_gib:.1f} GiB even at {what} "
               f"(> {gpu_gib:.1f} GiB); use fewer frames or a smaller batch")
    return Plan(model, gpu_gib, batch_size, low, False, why)


def arch_for(name: str, path: str | None = None) -> Arch | None:
    """Known numbers for an alias / hub id, else read from a local folder's config.json."""
    from ego_adr.models.registry import ALIASES

    spec = ALIASES.find(name)
    if spec is not None and spec.tiny and path is None:  # a tiny alias: its numbers are in its (built) folder
        from ego_adr.models.tiny import ensure_tiny

        path = str(ensure_tiny(spec.family))
    hub = spec.hub_id if spec else name
    known = _known()
    if hub in known:
        return known[hub]
    for cand in (path, name):
        if cand and Path(cand).is_dir():
            return arch_from_folder(cand)
    return None


class MemoryPlanError(ValueError):
    """The requested configuration cannot fit the GPU (raised before loading anything)."""


def on_cpu(device: str | None) -> bool:
    """Whether a load with this ``--device`` runs on the CPU (``auto`` without a CUDA GPU)."""
    if device in (None, "auto"):
        import torch

        return not torch.cuda.is_available()
    return str(device).startswith("cpu")


def plan_for_load(name: str, path: str, gpu_memory: str, *, frames: int = 32, batch_size: int = 1,
                  device: str | None = "cuda") -> int | None:
    """Used by ``load_model(..., gpu_memory=...)``: the pixel budget to use (None: the model's own default or a
    fixed-resolution family), or :class:`MemoryPlanError` with the reason when it cannot fit.

    On the CPU there is no GPU memory to plan, but the pixel budget is still the ``gpu_memory`` plan's, so a CPU
    run sees the frames a GPU run of the same settings sees; only the GPU table is not printed (issue 38: the
    demo printed a 24 GB plan for a 1 MB model on a CPU)."""
    import logging

    arch = arch_for(name, path)
    if arch is None:
        logging.getLogger(__name__).warning("no architecture numbers for %s: memory plan skipped", name)
        return None
    p = plan(name, arch, parse_memory(gpu_memory), frames, batch_size)
    if not p.fits:
        raise MemoryPlanError(f"{name} will not fit {gpu_memory}: {p.reason}")
    if on_cpu(device):
        print(f"device cpu: no GPU memory plan; frames are sized as on a {gpu_memory} GPU "
              f"(up to {_side(p.estimate.pixels_per_frame)} pixels per frame)", file=sys.stderr)
    else:
        print(f"memory plan for {name} on {gpu_memory} (estimate; see ego_adr.models.memory_planner):\n"
              f"{format_plans([p])}", file=sys.stderr)
    return p.estimate.pixels_per_frame


def _side(pixels: int | None) -> str:
    if not pixels:
        return "fixed"
    h = math.sqrt(pixels * 9 / 16)
    return f"{pixels} (≈{round(h * 16 / 9)}×{round(h)})"


def format_plans(plans: list[Plan]) -> str:
    head = ("| frames | batch | pixels/frame (16:9) | visual tokens | weights GiB | KV GiB | activations GiB "
            "| total GiB | fits |")
    rows = [head, "|---|---|---|---|---|---|---|---|---|"]
    for p in plans:
        e = p.estimate
        rows.append(f"| {e.frames} | {p.batch_size} | {_side(e.pixels_per_frame)} | {e.visual_tokens} | "
                    f"{e.weights_gib:.1f} | {e.kv_gib:.2f} | {e.act_gib:.2f} | {e.total_gib:.1f} | "
                    f"{'yes' if p.fits else 'NO: ' + p.reason} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    from ego_adr.models.families import model_help

    ap = OneLineParser(prog="python -m ego_adr.models.memory_planner", description=__doc__.split("\n\n")[0])
    # --model as every command has it (models/arguments.py), without the backend and device a plan does not use
    ap.add_argument("--model", default="qwen2.5-vl", metavar="MODEL",
                    help=model_help("qwen2.5-vl", "the model to plan for (a hub id needs known numbers): "))
    ap.add_argument("--gpu-memory", default="24GB", help="memory of one GPU (default: 24GB, Section 6.1)")
    ap.add_argument("--frames", type=int, nargs="+", default=[8, 16, 24, 32], help="default: 8 16 24 32")
    ap.add_argument("--batch-size", type=int, default=1, help="default: 1")
    ap.add_argument("--new-tokens", type=int, default=NEW_TOKENS, help=f"default: {NEW_TOKENS}")
    ap.add_argument("--text-tokens", type=int, default=PROMPT_TEXT_TOKENS, help=f"default: {PROMPT_TEXT_TOKENS}")
    ap.add_argument("--frame-size", help="WxH of the decoded frames, e.g. 640x360 (frames are never upscaled)")
    ap.add_argument("--pixels", type=int, help="check this per-frame pixel budget instead of searching for one")
    ap.add_argument("--json", action="store_true", help="print the plans as JSON lines instead of a table")
    a = ap.parse_args(argv)
    arch = arch_for(a.model)
    if arch is None:
        ap.error(f"no architecture numbers for {a.model!r}: pass an alias ({', '.join(_aliases())}) "
                 "or a local model folder with config.json")
    fs = None
    if a.frame_size:
        w, _, h = a.frame_size.lower().partition("x")
        fs = (int(w), int(h))
    gpu = parse_memory(a.gpu_memory)
    plans = [plan(a.model, arch, gpu, f, a.batch_size, frame_size=fs, pixels=a.pixels, new_tokens=a.new_tokens,
                  text_tokens=a.text_tokens) for f in a.frames]
    if a.json:
        for p in plans:
            print(json.dumps(dict(asdict(replace(p, estimate=None)), estimate=asdict(p.estimate),
                                  total_gib=p.estimate.total_gib)))
    else:
        print(f"Memory plan for {a.model} on {gpu:.0f} GiB, batch {a.batch_size}, {a.text_tokens} text + "
              f"{a.new_tokens} new tokens (analytic estimate):\n")
        print(format_plans(plans))
    return 0 if all(p.fits for p in plans) else 1


def _aliases() -> list[str]:
    from ego_adr.models.registry import ALIASES

    return ALIASES.names()


if __name__ == "__main__":
    sys.exit(main())
