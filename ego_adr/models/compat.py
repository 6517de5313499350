"""Which transformers line is installed, and the few places where 4.57.x and 5.x differ for us.

Why: the public EgoErrorVQA white agent (the paper's Table 4 baselines) runs on transformers 4.57.3 (its
``uv.lock``); our default runtime is 5.x. Both must work (pyproject: ``transformers>=4.57,<6``; the
``public-runtime`` extra pins the public lock). What differs and matters here (measured; docs/stack-notes.md):

* tiny-model configs: 5.x writes ``rope_parameters``, 4.57 reads ``rope_scaling`` + ``rope_theta``; 4.57's
  Qwen-VL processors insist on a ``Qwen2TokenizerFast`` and have no ``cap_pixels_per_frame``. A folder saved by
  one line does not load in the other, so the tiny models are built per line (``tiny_suffix``);
* the Qwen2.5-VL clip rate: 4.57 reads ``fps`` from the processor call (default 2.0), 5.x the video metadata's
  ``sampled_fps`` (24 when absent);
* Qwen3-VL's video processor: 4.57 has no per-frame cap (``cap_pixels_per_frame``, ``max_video_tokens``) and
  bounds the whole clip; the family's ``v4_clips`` resizes each clip as 5.x would (``families/qwen3_vl.py``);
* flat processor keywords: once a ``videos_kwargs`` dict is given, 4.57 drops a flat ``video_metadata`` (so
  Qwen3-VL's timestamps fell back to 24 fps); on 4.57 it goes inside that dict (``models/hf.py``);
* the Qwen2.5-VL rope index: text positions after a video resume at ``start + max(h, w) / merge`` in 5.x and at
  the largest vision position + 1 in 4.57, so identical inputs give different logits (:data:`ROPE_INDEX_NOTE`).

A leaf: importing it imports nothing heavy (the version is read from package metadata).
"""

from __future__ import annotations

from functools import lru_cache

ROPE_INDEX_NOTE = ("transformers 5.x places Qwen2.5-VL's text positions after a video differently from 4.57.3 "
                   "(rope index: start + max(h, w)/merge instead of the largest vision position + 1), so the "
                   "same inputs can give other replies than the public white agent's runtime; install the "
                   "public runtime (`pip install -e '.[public-runtime]'`, transformers 4.57.3) for reply identity")


@lru_cache(maxsize=1)
def transformers_version() -> str:
    """From the installed distribution's metadata (first on ``sys.path``, as the import would be), so that asking
    does not import transformers (``--dry-run`` loads no model library)."""
    from importlib import metadata

    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        import transformers

        return str(transformers.__version__)


def transformers_major() -> int:
    return int(transformers_version().split(".")[0])


def is_v4() -> bool:
    """True on the 4.x line (the public white agent's runtime, 4.57.x)."""
    return transformers_major() < 5


def tiny_suffix() -> str:
    """Suffix of a tiny model's cache folder: empty on 5.x (the folders the demo was built with), ``-tf4`` on 4.x
    (a 5.x folder does not load there, and vice versa)."""
    return "-tf4" if is_v4() else ""


def rope_config(theta: float, mrope_section: list[int] | None = None, **extra) -> dict:
    """The rope keys of a text config in the installed line's spelling."""
    if not is_v4():
        params = {"rope_type": "default", "rope_theta": theta, **extra}
        if mrope_section is not None:
            params["mrope_section"] = mrope_section
        return {"rope_parameters": params}
    out: dict = {"rope_theta": theta}
    if mrope_section is not None:
        out["rope_scaling"] = {"type": "mrope", "mrope_section": mrope_section, **extra}
    elif extra:
        out["rope_scaling"] = dict(extra)
    return out


def image_text_model_class(config):
    """``AutoModelForImageTextToText``, or the config's own model class where 4.57's auto mapping lacks the
    architecture (Video-LLaVA)."""
    import transformers as tf
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES as ITT

    model_type = getattr(type(config), "model_type", "") or config.model_type
    if model_type in ITT:
        return tf.AutoModelForImageTextToText
    names = getattr(config, "architectures", None) or [type(config).__name__.replace("Config", "ForConditionalGeneration")]
    return getattr(tf, names[0])


def runtime_versions() -> dict:
    """The library versions that decide numbers (what a run records in run.json and its report): transformers,
    torch, torchvision, tokenizers, qwen-vl-utils (when installed: the public white agent's frame resizing) and
    the video decoders."""
    from importlib import metadata

    out: dict = {}
    for dist in ("transformers", "torch", "torchvision", "tokenizers", "qwen-vl-utils", "pillow", "decord", "av",
                 "opencv-python-headless", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out
