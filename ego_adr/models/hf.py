"""Hugging Face backend: any image-text-to-text model with a chat template, batched, one failure per sample.

Why this shape: every video LM the paper evaluates (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, LLaVA-OneVision,
Video-LLaVA, InternVL3.5) ships an ``AutoProcessor`` whose chat template inserts its own video placeholder, so one
generic path (template -> processor(text, videos, video_metadata) -> ``generate``) covers them all; the tiny
offline models go through exactly the same code. Text-only causal LMs (the open-ended judges, paper Section 4.2)
use the tokenizer's template instead; the judges (``ego_adr.run.judging``) run on this class too, so VLMs and
judges share one generation path.

Decoding is greedy with the request's ``max_new_tokens`` (256 in the paper, Appendix C/H) unless the request
asks for sampling (``GenerationConfig.do_sample``: temperature, top-p, no top-k, a per-request seed). Batches are
left padded; a batch that raises is retried one request at a time so only the bad request fails; a CUDA
out-of-memory error on one request is reported on that request and the cache is cleared.

A sampled request is generated alone, under ``torch.manual_seed(seed)`` inside ``torch.random.fork_rng`` (the
process's random state is restored afterwards). Why alone: transformers draws every row of a batch from one
generator, so a reply would depend on which other requests shared its batch and in what order, and padding would
change its logits slightly; alone and seeded, a sampled request's reply depends on the request only (the same
alone, in any batch, locally and behind :mod:`ego_adr.models.serve`). Sampled calls are few and short (PREGO's
replies are 8 tokens), so the lost batching costs little; vLLM seeds per request natively and keeps its batching.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager
from pathlib import Path

from ego_adr.models.base import Capabilities, Generation, GenerationConfig, Request
from ego_adr.models.compat import image_text_model_class, is_v4
from ego_adr.models.families import family_for_model_type, get_family
from ego_adr.models.hf_inputs import (
    BadRequest,
    qwen_pixel_kwargs,
    render_text_prompt,
    text_conversation,
    to_processor_input,
    video_metadata,
)
from ego_adr.models.hf_likelihood import cpu_threads as _cpu_threads
from ego_adr.models.packaged import file_fingerprint, gguf_source
from ego_adr.models.registry import ModelSpec, hub_offline, unknown_model_message
from ego_adr.store import folder_fingerprint
from ego_adr.video.public_policy import QVU_0_0_14

log = logging.getLogger(__name__)


def _pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {device!r} requested but CUDA is not available; use --device cpu")
    return device


def _pick_dtype(dtype: str | None, device: str):
    """bf16 on GPU, float32 on CPU (CPU bf16 matmuls are slow and lossy)."""
    import torch

    if dtype is None or dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    table = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16,
             "fp32": torch.float32, "float32": torch.float32}
    if dtype not in table:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(table)}")
    return table[dtype]


def _check_available(name: str, revision: str | None, known: bool) -> None:
    """Fail fast, with what to do, when a hub id cannot be loaded offline."""
    if Path(name).is_file():  # a GGUF checkpoint: checked by gguf_source
        return
    if Path(name).is_dir():
        if not (Path(name) / "config.json").exists():
            raise FileNotFoundError(f"{name} is a folder but has no config.json: not a Hugging Face model folder")
        return
    from huggingface_hub import try_to_load_from_cache

    offline = hub_offline()
    cached = try_to_load_from_cache(name, "config.json", revision=revision) if "/" in name else None
    if "/" not in name or (offline and not isinstance(cached, str)):
        raise ValueError(unknown_model_message(name, known))
    if not isinstance(cached, str):  # to be fetched: find out in a second whether the hub is there at all
        from ego_adr.models.hub import require_reachable

        require_reachable(name)


class HFVideoLM:
    """The Hugging Face backend (see module docstring)."""

    backend = "hf"  # reported by the model itself (the stage-cache key, run.json)

    def __init__(
        self,
        name_or_path: str,
        *,
        spec: ModelSpec | None = None,
        device: str = "auto",
        dtype: str | None = None,
        batch_size: int = 1,
        max_pixels_per_frame: int | None = None,
        planned_max_pixels: int | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        attn_implementation: str | None = None,
    ) -> None:
        import transformers as tf

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        _check_available(name_or_path, revision, spec is not None)
        self._name, self._revision = name_or_path, revision
        self.batch_size = int(batch_size)
        self.device = _pick_device(device)
        self.dtype = _pick_dtype(dtype, self.device)
        self.max_pixels_per_frame = max_pixels_per_frame
        source, gguf = gguf_source(name_or_path)
        common = {"revision": revision, "trust_remote_code": trust_remote_code, **gguf}
        try:
            config = tf.AutoConfig.from_pretrained(source, **common)
        except OSError as e:
            raise ValueError(f"{unknown_model_message(name_or_path, spec is not None)}\n(cause: {e})") from e
        # every per-family quirk comes from the family (ego_adr.models.families); an unknown architecture goes
        # through the same generic path, as a VLM when transformers lists it as image-text-to-text
        # the class's own model_type: 4.57's Qwen-VL configs forward attribute reads to their text config
        model_type = getattr(type(config), "model_type", "") or config.model_type
        fam = get_family(spec.family) if spec else family_for_model_type(model_type)
        self.family_spec = fam
        self.family = fam.name if fam else None
        from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES as ITT

        self.is_vlm = fam.kind == "vlm" if fam else model_type in ITT
        self._metadata = fam.video_metadata if fam else video_metadata
        # transformers parses a GGUF whole each time it reads from it: given the config above, once less of four
        load_kw = dict(common, dtype=self.dtype, **({"config": config} if gguf else {}))  # SmolLM2: 28 -> 24 s
        if attn_implementation:
            load_kw["attn_implementation"] = attn_implementation
        if self.device.startswith("cuda"):
            load_kw["device_map"] = self.device
        t0 = time.perf_counter()
        if self.is_vlm:
            self.processor = tf.AutoProcessor.from_pretrained(source, **common)
            self.tokenizer = self.processor.tokenizer
            self.model = image_text_model_class(config).from_pretrained(source, **load_kw)
            if getattr(self.processor, "chat_template", None) is None:
                raise ValueError(f"{name_or_path}: the processor has no chat template; this backend needs one")
            vp = getattr(self.processor, "video_processor", None)
            pixel_kwargs = fam.video_kwargs if fam else qwen_pixel_kwargs  # the generic one is duck-typed
            self._video_kwargs = pixel_kwargs(vp, max_pixels_per_frame, planned_max_pixels) if vp else {}
            if max_pixels_per_frame is not None and not (fam.pixel_budget if fam else "size" in self._video_kwargs):
                log.warning("%s resizes frames to a fixed resolution: max_pixels_per_frame is ignored", name_or_path)
        else:
            self.family = self.family or "text-llm"
            self.processor = None
            self.tokenizer = tf.AutoTokenizer.from_pretrained(source, **common)
            self.model = tf.AutoModelForCausalLM.from_pretrained(source, **load_kw)
            self._video_kwargs = {}
        if not self.device.startswith("cuda"):
            self.model.to(self.device)
        self.model.eval()
        self.load_seconds = time.perf_counter() - t0
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        # A tiny model on CPU (tests, demo) gains nothing from intra-op threads and loses a lot when the CPU is
        # shared: 8 frames + 256 tokens took 1.75 s on 1 thread vs 13.9 s on 2 threads with a loaded 2-core box.
        n_params = sum(p.numel() for p in self.model.parameters())
        self._cpu_threads = 1 if self.device == "cpu" and n_params < 50_000_000 else None
        self._commit = getattr(config, "_commit_hash", None)
        self._fingerprint: str | None = None
        log.info("loaded %s (%s, %s, %s) in %.1fs", name_or_path, self.family, self.device, self.dtype,
                 self.load_seconds)

    # ---- protocol -------------------------------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return self._name

    @property
    def fingerprint(self) -> str:
        """Model identity + everything of ours that changes outputs (dtype, pixel budget)."""
        if self._fingerprint is None:
            if Path(self._name).is_dir():
                ident = f"{Path(self._name).name}@{folder_fingerprint(Path(self._name))}"
            elif Path(self._name).is_file():  # a GGUF checkpoint
                ident = f"{Path(self._name).name}@{file_fingerprint(Path(self._name))}"
            else:
                ident = f"{self._name}@{self._revision or self._commit or 'main'}"
            dt = str(self.dtype).removeprefix("torch.")
            self._fingerprint = f"hf:{ident}:{dt}:px={self._pixel_tag()}"
        return self._fingerprint

    def _pixel_tag(self) -> str:
        """The per-frame pixel budget in force: a per-frame ``size`` (Qwen2/2.5-VL) or a token-cell cap
        (Qwen3-VL); 'default' for fixed-resolution processors."""
        kw = self._video_kwargs
        if "longest_edge" in kw.get("size", {}):
            return str(kw["size"]["longest_edge"])
        return f"{kw['max_video_tokens']}cells" if "max_video_tokens" in kw else "default"

    @property
    def capabilities(self) -> Capabilities:
        text_only = self.family_spec is None or self.family_spec.text_only
        return Capabilities(video=self.is_vlm, text_only=text_only, max_batch_size=self.batch_size)

    def generate(self, requests: list[Request]) -> list[Generation]:
        """One Generation per request, in order. Requests are grouped by generation config (stable), cut into
        batches of ``batch_size``; malformed requests fail alone without running the model."""
        out: list[Generation | None] = [None] * len(requests)
        prepared: dict[int, object] = {}
        for i, r in enumerate(requests):
            try:
                prepared[i] = to_processor_input(r, metadata=self._metadata) if self.is_vlm else text_conversation(r)
            except BadRequest as e:
                out[i] = Generation(text=None, error=f"bad request: {e}")
        groups: dict[tuple, list[int]] = {}
        equal_frames = self.family_spec is not None and self.family_spec.equal_frames_in_batch
        for i in prepared:
            key = tuple(sorted(requests[i].config.key().items()))
            if equal_frames:  # a family quirk: its processor cannot stack clips of different lengths
                key += tuple(len(v) for v in prepared[i].videos)
            groups.setdefault(key, []).append(i)
        for idx in groups.values():
            size = 1 if requests[idx[0]].config.do_sample else self.batch_size  # sampled: alone (module doc)
            for s in range(0, len(idx), size):
                chunk = idx[s : s + size]
                for i, g in zip(chunk, self._run_chunk([prepared[i] for i in chunk], requests[chunk[0]])):
                    out[i] = g
        return out  # type: ignore[return-value]

    def loglikelihood(self, requests: list) -> list:
        """Candidate likelihoods of a text causal LM (:mod:`ego_adr.models.hf_likelihood`)."""
        from ego_adr.models.hf_likelihood import loglikelihood

        return loglikelihood(self, requests)

    def prompt_logprobs(self, text: str) -> tuple[list[str], list[int], list[float | None]]:
        """Each token of a raw ``text`` with its start offset and log-probability (what ``/v1/completions`` with
        ``echo`` returns; :mod:`ego_adr.models.serve`)."""
        from ego_adr.models.hf_likelihood import prompt_logprobs

        return prompt_logprobs(self, text)

    def encode(self, requests: list[Request]):
        """What the processor (or tokenizer) makes of these requests, as one left-padded batch: the exact model
        input, without generating. For checking a family's token layout against the memory planner."""
        prep = [to_processor_input(r, metadata=self._metadata) if self.is_vlm else text_conversation(r)
                for r in requests]
        return self._encode(prep)

    # ---- internals ------------------------------------------------------------------------------------------
    def _run_chunk(self, items: list, request: Request) -> list[Generation]:
        t0 = time.perf_counter()
        try:
            texts = self._generate_batch(items, request.config)
            per = (time.perf_counter() - t0) / len(items)
            self._note_peak_memory(len(items))
            return [Generation(text=t, seconds=per) for t in texts]
        except Exception as e:  # noqa: BLE001 - isolate: retry one by one below
            self._after_failure(e)
            if len(items) == 1:
                return [Generation(text=None, error=_describe(e), seconds=time.perf_counter() - t0)]
            log.warning("batch of %d failed (%s); retrying one by one", len(items), _describe(e))
        return [self._run_chunk([it], request)[0] for it in items]

    def _note_peak_memory(self, n: int) -> None:
        """On CUDA, keep and log the measured peak so the planner's estimate can be checked."""
        if not self.device.startswith("cuda"):
            return
        import torch

        peak = torch.cuda.max_memory_allocated() / (1 << 30)
        self.peak_gpu_gib = max(getattr(self, "peak_gpu_gib", 0.0), peak)
        log.info("batch of %d: peak GPU memory allocated %.2f GiB", n, peak)

    def _after_failure(self, e: Exception) -> None:
        import torch

        if isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower():
            if torch.cuda.is_available():
                torch.cuda.empty_cache()

    def _encode(self, items: list):
        if not self.is_vlm:
            texts = [render_text_prompt(self.tokenizer, c) for c in items]
            # 4.57's generic fast tokenizer also returns token_type_ids, which causal LMs' generate refuses
            return self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False,
                                  return_token_type_ids=False)
        texts = [
            self.processor.apply_chat_template(it.conversation, tokenize=False, add_generation_prompt=True)
            for it in items
        ]
        kw: dict = {"text": texts, "return_tensors": "pt", "padding": True}
        videos = [v for it in items for v in it.videos]
        if videos:
            kw["videos"] = videos
            metadata = [m for it in items for m in it.metadata]
            if self._takes_metadata():
                kw["video_metadata"] = metadata
            video_kwargs = self._video_kwargs_for([r for it in items for r in it.resized_by])
            if is_v4():
                if self.family == "qwen2.5-vl":  # 4.57 reads the clip rate from `fps` (default 2.0) only
                    video_kwargs["fps"] = [float(m["fps"]) for m in metadata]
                if self.family_spec is not None and self.family_spec.v4_clips is not None:
                    kw["videos"], video_kwargs = self.family_spec.v4_clips(self.processor.video_processor, videos,
                                                                           video_kwargs)
                if video_kwargs and "video_metadata" in kw:
                    # 4.57 reads no flat video keyword once a videos_kwargs dict is given: the metadata goes in it
                    video_kwargs["video_metadata"] = kw.pop("video_metadata")
            if video_kwargs:
                kw["videos_kwargs"] = video_kwargs
        return self.processor(**kw)

    def _forward_takes(self, name: str) -> bool:
        import inspect

        return name in inspect.signature(self.model.forward).parameters

    def _takes_metadata(self) -> bool:
        """5.x processors all take ``video_metadata``; on 4.57 some (Video-LLaVA) take no extra keywords."""
        if not is_v4():
            return True
        import inspect

        params = inspect.signature(self.processor.__call__).parameters.values()
        return any(p.kind is p.VAR_KEYWORD or p.name == "video_metadata" for p in params)

    def _video_kwargs_for(self, resized_by: list) -> dict:
        """Our per-frame budget, except for frames already sized by the public white agent's qwen-vl-utils
        (``Frames.resized_by``): those reach the processor as the public agent sends them, with the processor's
        own settings (an explicit ``max_pixels_per_frame`` still applies)."""
        if resized_by and all(r == QVU_0_0_14 for r in resized_by) and self.max_pixels_per_frame is None:
            return {k: v for k, v in self._video_kwargs.items() if k != "size"}
        return dict(self._video_kwargs)

    def _generate_batch(self, items: list, config: GenerationConfig) -> list[str]:
        import torch

        inputs = self._encode(items).to(self.model.device)
        if "token_type_ids" in inputs and not self._forward_takes("token_type_ids"):
            del inputs["token_type_ids"]  # 4.57's Video-LLaVA processor returns them; its generate refuses them
        for k, v in inputs.items():
            # only pixels take the model's dtype: timing tensors such as second_per_grid_ts would lose precision
            # in bf16 (0.5333 s -> 0.5312 s) and shift Qwen-VL's temporal position ids
            if k.startswith("pixel_values") and torch.is_tensor(v) and torch.is_floating_point(v):
                inputs[k] = v.to(self.dtype)
        gen_cfg = self.model.generation_config.__class__.from_dict(self.model.generation_config.to_dict())
        gen_cfg.update(do_sample=False, temperature=None, top_p=None, top_k=None, max_new_tokens=config.max_new_tokens,
                       pad_token_id=self.tokenizer.pad_token_id)
        if config.do_sample:
            gen_cfg.update(do_sample=True, temperature=config.temperature, top_p=config.top_p)
        with torch.inference_mode(), _cpu_threads(self._cpu_threads), self._seeded(config):
            out = self.model.generate(**inputs, generation_config=gen_cfg)
        new = out[:, inputs["input_ids"].shape[1] :]
        return [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]

    @contextmanager
    def _seeded(self, config: GenerationConfig):
        """A sampled request's own random state (module docstring); nothing for a greedy one."""
        if not config.do_sample:
            yield
            return
        import torch

        cuda = self.model.device.type == "cuda"
        with torch.random.fork_rng(devices=[self.model.device] if cuda else [], device_type="cuda"):
            torch.manual_seed(config.seed)
            yield

    def describe(self) -> dict:
        """What a run records about the model (results header)."""
        return {"model_id": self.model_id, "fingerprint": self.fingerprint, "family": self.family,
                "device": self.device, "dtype": str(self.dtype), "batch_size": self.batch_size,
                "video_kwargs": json.loads(json.dumps(self._video_kwargs, default=str)),
                "peak_gpu_gib": getattr(self, "peak_gpu_gib", None)}


def _describe(e: Exception) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    if "out of memory" in msg.lower():
        return f"out of memory: {msg[:300]}"
    return f"{type(e).__name__}: {msg[:300]}"
