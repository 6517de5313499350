"""vLLM offline engine backend (``pip install 'ego-adr[vllm]'``; Linux with a CUDA GPU).

Why: one GPU node running vLLM batches hundreds of requests with paged attention and tensor parallelism, which is
what a full EgoErrorVQA run over several models needs. The pipeline is unchanged; only the backend differs.

Frames are sampled by *our* sampler (``ego_adr.video.sampler``) so every backend sees the same frames; they are passed to
vLLM as one video per :class:`Frames` part, as ``(array, metadata)`` with ``frames_indices = 0..N-1`` and
``fps = Frames.fps`` (the rate of the sampled frames), plus ``mm_processor_kwargs = {"fps": ..., "do_sample_frames":
False}``. Both carriers are needed across versions: with transformers 4.x the Qwen2.5-VL processor takes the frame
rate from the ``fps`` kwarg (temporal position ids: ``second_per_grid_ts = temporal_patch_size / fps``); with
transformers 5.x it takes it from the video metadata (``sampled_fps``), which vLLM forwards for Qwen3-VL and, since
vLLM PR #47736, for Qwen2.5-VL (older vLLM drops it there, and Qwen2.5-VL then assumes 24 fps). ``do_sample_frames
=False`` keeps the video processors from re-sampling. Note that Qwen2.5-VL truncates ``second_per_grid_ts`` to an
integer, so sampled rates above 2 fps collapse its temporal positions (e.g. 32 frames from a clip shorter than
16 s): a property of the model's position ids, not of this backend.

Frames larger than ``max_pixels_per_frame`` are downscaled here, so the token budget does not depend on a processor
option whose name differs between model families.

Greedy decoding (the paper's setting, Appendix C, H) is ``SamplingParams(temperature=0)``. A sampled request
(``GenerationConfig.do_sample``) is ``SamplingParams(temperature, top_p, seed)``: vLLM gives each request with a
seed its own generator, so its reply does not depend on the batch it is scheduled in (top-k stays vLLM's default,
off, as in the other backends).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from .base import Capabilities, Frames, Generation, Request
from .hf_inputs import text_conversation, to_processor_input
from .hf_inputs import video_metadata as hf_video_metadata

VLLM_MISSING = (
    "the vLLM backend needs the vllm package, which is not installed: pip install 'ego-adr[vllm]' "
    "(Linux with an NVIDIA GPU). Without a GPU use --backend hf, or --backend openai against a vLLM server "
    "running elsewhere."
)

#: Default per-frame pixel budget: 448x448, the same order as the Qwen-VL video default (paper Appendix C uses the
#: processors' defaults); large egocentric frames are downscaled to it, never upscaled.
DEFAULT_MAX_PIXELS_PER_FRAME = 448 * 448


def import_vllm():
    try:
        import vllm
    except ImportError as e:
        raise ImportError(VLLM_MISSING) from e
    return vllm


def limit_pixels(array: np.ndarray, max_pixels: int | None) -> np.ndarray:
    """Downscale ``(N, H, W, 3)`` frames (aspect kept) so that ``H * W <= max_pixels``."""
    n, h, w, _ = array.shape
    if not max_pixels or h * w <= max_pixels:
        return array
    import cv2

    scale = (max_pixels / (h * w)) ** 0.5
    nw, nh = max(1, int(w * scale)), max(1, int(h * scale))
    return np.stack([cv2.resize(f, (nw, nh), interpolation=cv2.INTER_AREA) for f in array])


def video_metadata(frames: Frames) -> dict:
    """The one metadata of :func:`ego_adr.models.hf_inputs.video_metadata` (every frame kept, at
    ``frames.fps``), plus the two keys of vLLM's own video loaders."""
    return {**hf_video_metadata(frames), "video_backend": "ego_adr", "do_sample_frames": False}


def to_vllm_input(
    request: Request, processor, *, max_pixels_per_frame: int | None = DEFAULT_MAX_PIXELS_PER_FRAME
) -> dict:
    """One request → a vLLM prompt dict (pure: needs only an object with ``apply_chat_template``).

    ``{"prompt": str, "multi_modal_data": {"video": [(frames, metadata), ...]}, "mm_processor_kwargs": {...}}``;
    the multimodal keys are absent for text-only requests. The conversation comes from the one converter of the HF
    backend (:func:`ego_adr.models.hf_inputs.to_processor_input`); a text-only tokenizer gets string content.
    """
    pi = to_processor_input(request)
    has_vision = hasattr(processor, "video_processor") or hasattr(processor, "image_processor")
    conv = pi.conversation if has_vision else text_conversation(request)
    prompt = processor.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    out: dict = {"prompt": prompt}
    clips = [p for m in request.messages for p in m.content if isinstance(p, Frames)]
    if clips:
        small = [Frames(np.ascontiguousarray(limit_pixels(c.as_uint8(), max_pixels_per_frame)), c.fps) for c in clips]
        out["multi_modal_data"] = {"video": [(c.array, video_metadata(c)) for c in small]}
        out["mm_processor_kwargs"] = {"do_sample_frames": False}
        fps = {float(c.fps) for c in clips}
        if len(fps) == 1:  # HF validates fps as a scalar; clips at different rates rely on their metadata
            out["mm_processor_kwargs"]["fps"] = fps.pop()
    return out


def sampling_kwargs(request: Request) -> dict:
    """``SamplingParams`` keywords of one request (greedy: exactly what they were before sampling existed)."""
    cfg = request.config
    if not cfg.do_sample:
        return {"temperature": 0.0, "max_tokens": int(cfg.max_new_tokens)}
    return {"temperature": cfg.temperature, "top_p": cfg.top_p, "seed": cfg.seed, "max_tokens": int(cfg.max_new_tokens)}


class VLLMModel:
    """VLM protocol on a ``vllm.LLM`` in this process (tensor parallel over ``tensor_parallel_size`` GPUs)."""

    backend = "vllm"  # reported by the model itself (the stage-cache key, run.json)

    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        limit_mm_per_prompt: dict | None = None,
        max_model_len: int = 32768,
        gpu_memory_utilization: float = 0.9,
        dtype: str = "bfloat16",
        max_pixels_per_frame: int | None = DEFAULT_MAX_PIXELS_PER_FRAME,
        revision: str | None = None,
        seed: int = 0,
        trust_remote_code: bool = False,
        max_batch_size: int = 64,
        engine_kwargs: dict | None = None,
        batch_size: int | None = None,
        gpu_memory: str | None = None,
        **extra,
    ):
        if extra:
            warnings.warn(f"VLLMModel ignores unknown options: {sorted(extra)}", stacklevel=2)
        vllm = import_vllm()
        from transformers import AutoProcessor

        from .registry import TEXT_ONLY_FAMILIES, resolve

        path, spec = resolve(model)
        self.name = model
        self.path = path
        self.family = spec.family if spec else _family_of_folder(path)
        self.tensor_parallel_size = int(tensor_parallel_size)
        self.dtype = dtype
        self.max_pixels_per_frame = max_pixels_per_frame
        self.revision = revision
        # the pipeline's batch_size is how many requests it hands over at once; vLLM schedules them itself
        self._max_batch_size = int(batch_size or max_batch_size)
        if gpu_memory is not None:
            gpu_memory_utilization = gpu_fraction(gpu_memory, default=gpu_memory_utilization)
        self._text_only = self.family is None or self.family in TEXT_ONLY_FAMILIES
        self.processor = AutoProcessor.from_pretrained(
            path, revision=revision, trust_remote_code=trust_remote_code
        )
        kwargs = dict(
            model=path,
            tensor_parallel_size=self.tensor_parallel_size,
            limit_mm_per_prompt=dict(limit_mm_per_prompt or {"video": 1}),
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            dtype=dtype,
            seed=seed,
            revision=revision,
            trust_remote_code=trust_remote_code,
        )
        kwargs.update(engine_kwargs or {})
        self.llm = vllm.LLM(**kwargs)
        self._SamplingParams = vllm.SamplingParams
        self._fingerprint = f"vllm:{path}:{revision or _snapshot_id(path)}:{dtype}:px{max_pixels_per_frame}"

    @property
    def model_id(self) -> str:
        return self.name

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(video=True, text_only=self._text_only, max_batch_size=self._max_batch_size)

    def generate(self, requests: list[Request]) -> list[Generation]:
        """Batch through ``llm.generate``; if the batch fails, each request runs alone so one bad sample
        fails only itself. ``seconds`` is the batch time shared equally among its requests."""
        results: list[Generation | None] = [None] * len(requests)
        inputs, params, index = [], [], []
        for i, r in enumerate(requests):
            t0 = time.perf_counter()
            try:
                inputs.append(
                    to_vllm_input(r, self.processor, max_pixels_per_frame=self.max_pixels_per_frame)
                )
                params.append(self._SamplingParams(**sampling_kwargs(r)))
                index.append(i)
            except Exception as e:
                results[i] = Generation(None, f"prepare: {type(e).__name__}: {e}", time.perf_counter() - t0)
        if inputs:
            t0 = time.perf_counter()
            try:
                outs = self.llm.generate(inputs, params, use_tqdm=False)
                share = (time.perf_counter() - t0) / len(inputs)
                for i, o in zip(index, outs, strict=True):
                    results[i] = _to_generation(o, share)
            except Exception:
                for i, inp, sp in zip(index, inputs, params, strict=True):
                    t1 = time.perf_counter()
                    try:
                        o = self.llm.generate([inp], [sp], use_tqdm=False)[0]
                        results[i] = _to_generation(o, time.perf_counter() - t1)
                    except Exception as e:
                        results[i] = Generation(
                            None, f"vllm: {type(e).__name__}: {e}", time.perf_counter() - t1
                        )
        return [g if g is not None else Generation(None, "no output") for g in results]


def gpu_fraction(gpu_memory: str, default: float) -> float:
    """A memory budget like ``"24GB"`` as vLLM's ``gpu_memory_utilization`` (fraction of GPU 0), so the same
    ``--gpu-memory`` flag works for the HF and vLLM backends."""
    text = gpu_memory.strip().upper().removesuffix("B").removesuffix("I")
    units = {"G": 1024**3, "M": 1024**2, "T": 1024**4}
    try:
        value = float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text) * 1024**3
    except ValueError as e:
        raise ValueError(f"gpu_memory must look like '24GB', got {gpu_memory!r}") from e
    try:
        import torch

        total = torch.cuda.get_device_properties(0).total_memory
    except Exception:
        warnings.warn("no CUDA device to size gpu_memory against; using gpu_memory_utilization", stacklevel=2)
        return default
    return max(0.05, min(0.95, value / total))


def _family_of_folder(path: str) -> str | None:
    import json

    from .registry import family_from_model_type

    cfg = Path(path) / "config.json"
    try:
        return family_from_model_type(json.loads(cfg.read_text()).get("model_type"))
    except (OSError, ValueError):
        return None


def _to_generation(output, seconds: float) -> Generation:
    if not output.outputs:
        return Generation(None, "vllm returned no completion", seconds)
    return Generation(output.outputs[0].text, None, seconds)


def _snapshot_id(path: str) -> str:
    """Commit of a hub snapshot (``.../snapshots/<commit>``) or the folder's config mtime; best effort."""
    p = Path(path)
    if p.is_dir():
        if p.parent.name == "snapshots":
            return p.name
        cfg = p / "config.json"
        return f"mtime{int(cfg.stat().st_mtime)}" if cfg.exists() else "local"
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(path, local_files_only=True)).name
    except Exception:
        return "main"
