"""The shape of a model family (:class:`Family`) and the planner-number helpers the family modules share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ego_adr.models.hf_inputs import video_metadata


@dataclass(frozen=True)
class Arch:
    """What memory depends on. Numbers for the registry's models are from their hub config.json files."""

    params_b: float  # total parameters, billions
    hidden: int
    layers: int
    kv_heads: int
    head_dim: int
    intermediate: int
    v_hidden: int = 0
    v_intermediate: int = 0
    patch: int = 14
    merge: int = 2
    temporal_patch: int = 2
    tokens_per_frame: int | None = None  # fixed-resolution families; None = Qwen-style pixel budget
    patches_per_frame: int | None = None  # vision-tower patches per frame for fixed-resolution families
    max_frames: int | None = None  # Video-LLaVA is trained on exactly 8 frames
    tokens_per_clip: int = 0  # fixed-resolution families: extra tokens per clip (LLaVA-OneVision's newline)

    @property
    def dynamic(self) -> bool:
        return self.tokens_per_frame is None

    @property
    def unit(self) -> int:  # pixels of one merged token cell
        return (self.patch * self.merge) ** 2


@dataclass(frozen=True)
class HubModel:
    """A released checkpoint of a family: its alias, hub id, why it is listed, and the planner's numbers (read
    from its hub ``config.json``)."""

    alias: str
    hub_id: str
    notes: str = ""
    arch: Arch | None = None


def no_video_kwargs(video_processor, max_pixels_per_frame: int | None, cap: int | None) -> dict:
    """Fixed-resolution families: the per-frame token count does not depend on a pixel budget."""
    return {"do_sample_frames": False} if getattr(video_processor, "do_sample_frames", False) else {}


@dataclass(frozen=True)
class Family:
    """One model family. ``kind`` "vlm" loads with ``AutoProcessor`` + ``AutoModelForImageTextToText``; "text"
    (the open-ended judges) with ``AutoTokenizer`` + ``AutoModelForCausalLM``."""

    name: str
    kind: str
    model_types: tuple[str, ...]
    text_only: bool  # accepts a prompt without visual input (the probe then decides whether it reasons well)
    chat_style: str  # how its chat template lays out turns and visual placeholders (the tiny model copies it)
    hub: tuple[HubModel, ...]
    tiny_parts: Callable[[], tuple]  # () -> (model config, processor or tokenizer), built offline
    arch_from_config: Callable[[dict, float], Arch | None]  # planner numbers from a folder's config.json
    video_kwargs: Callable[[object, int | None, int | None], dict] = no_video_kwargs
    video_metadata: Callable = field(default=video_metadata)
    # transformers 4.57 only: (video processor, clips, video kwargs) -> (clips, kwargs) doing what the family's 5.x
    # processor does with those kwargs and 4.57's does not (models/compat.py lists the differences)
    v4_clips: Callable | None = None
    pixel_budget: bool = False  # frames are resized to a per-frame pixel budget (else: a fixed resolution)
    # the processor stacks a batch's clips into one tensor, so clips batched together need equal frame counts
    equal_frames_in_batch: bool = False
    max_frames: int | None = None  # frames per clip the checkpoints were trained on, when they have a limit
    notes: str = ""

    @property
    def tiny_alias(self) -> str:
        return f"tiny-{self.name}"


def qwen_vl_arch(cfg: dict, params_b: float) -> Arch | None:
    """Planner numbers of a Qwen-VL style config (pixel-budget video tokens), shared by the three Qwen-VL
    families; also used for their tiny models."""
    text, vis = _text_dims(cfg), cfg.get("vision_config") or {}
    if text is None:
        return None
    v_hidden = int(vis.get("embed_dim") or vis.get("hidden_size", 0))
    v_inter = int(vis.get("intermediate_size") or v_hidden * int(vis.get("mlp_ratio", 4)))
    return Arch(params_b, *text, v_hidden, v_inter, patch=int(vis.get("patch_size", 14)),
                merge=int(vis.get("spatial_merge_size", 2)), temporal_patch=int(vis.get("temporal_patch_size", 2)))


def text_arch(cfg: dict, params_b: float) -> Arch | None:
    text = _text_dims(cfg)
    return None if text is None else Arch(params_b, *text, tokens_per_frame=0)


def _text_dims(cfg: dict) -> tuple[int, int, int, int, int] | None:
    """(hidden, layers, kv_heads, head_dim, intermediate) of the language model in a config.json dict."""
    text = cfg.get("text_config") or cfg
    try:
        hidden, layers = int(text["hidden_size"]), int(text["num_hidden_layers"])
        heads = int(text["num_attention_heads"])
        kv = int(text.get("num_key_value_heads") or heads)
        head_dim = int(text.get("head_dim") or hidden // heads)
        return hidden, layers, kv, head_dim, int(text["intermediate_size"])
    except (KeyError, TypeError, ValueError):
        return None


def fixed_arch(cfg: dict, params_b: float, tokens_per_frame: int, patches_per_frame: int,
               max_frames: int | None = None, tokens_per_clip: int = 0) -> Arch | None:
    """Planner numbers of a fixed-resolution family (tokens per frame known from its vision config)."""
    text, vis = _text_dims(cfg), cfg.get("vision_config") or {}
    if text is None:
        return None
    return Arch(params_b, *text, int(vis.get("hidden_size", 0)), int(vis.get("intermediate_size", 0)),
                tokens_per_frame=tokens_per_frame, patches_per_frame=patches_per_frame, max_frames=max_frames,
                tokens_per_clip=tokens_per_clip)
