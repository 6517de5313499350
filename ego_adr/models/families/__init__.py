"""Model families: every per-family quirk in one place, one small module per family.

Why: the README promises that any of the paper's model families runs through one Hugging Face backend with no
code change. What differs between families is data, not control flow: whether the model accepts a prompt without
visual input (paper Section 3.2: Video-LLaVA does not), how its processor bounds frames (a pixel budget for the
Qwen-VL family, a fixed resolution elsewhere), what its video metadata must carry, the memory planner's
architecture numbers, the style of its chat template and the recipe of its tiny offline model. Each family module
declares one :class:`Family`; aliases (``qwen2.5-vl``, ``tiny-<arch>``, ...), the config ``model_type`` lookup and
the planner's table derive from :data:`FAMILIES`, so adding a family is one new module plus one line below.

Nothing here imports torch or transformers at import time; the tiny recipes import them when called.
"""

from __future__ import annotations

from ego_adr.models.families.spec import Family, HubModel
from ego_adr.registry import Registry

__all__ = ["FAMILIES", "REGISTRY", "TINY", "Family", "HubModel", "family_for_folder", "family_for_model_type",
           "get_family", "model_help", "video_aliases"]


def _load() -> Registry[Family]:
    from ego_adr.models.families import (
        internvl,
        llama_text,
        llava_onevision,
        qwen2_5_vl,
        qwen2_text,
        qwen2_vl,
        qwen3_vl,
        video_llava,
    )

    fams = [qwen2_vl.FAMILY, qwen2_5_vl.FAMILY, qwen3_vl.FAMILY, llava_onevision.FAMILY, video_llava.FAMILY,
            internvl.FAMILY, qwen2_text.FAMILY, llama_text.FAMILY]
    return Registry("model family", fams, describe=lambda f: f"{f.kind}, {', '.join(f.model_types)}")


#: The families in the order the planner's table and the docs list them (the shared registry type).
REGISTRY: Registry[Family] = _load()
FAMILIES: dict[str, Family] = REGISTRY.specs  # name -> Family (the live dict of the registry)


TINY = "tiny"  # the embedded random model, built offline


def video_aliases() -> list[str]:
    """One alias per video-language family (its first checkpoint), for ``--model`` help texts."""
    return [f.hub[0].alias for f in FAMILIES.values() if f.hub and f.kind == "vlm"]


def model_help(default: str | None, purpose: str = "") -> str:
    """The help of every ``--model`` (:mod:`ego_adr.models.arguments`; the planner, which loads no model, too)."""
    said = f"; default: {default}" if default else ""
    return (f"{purpose}an alias ({', '.join(video_aliases())}, ...), a hub id or a local model folder; "
            f"'{TINY}' is the embedded random model (offline){said}")


def get_family(name: str | None) -> Family | None:
    """The family named ``name``, or None (a model of no known family)."""
    return REGISTRY.find(name)


def family_for_model_type(model_type: str | None) -> Family | None:
    """The family of a config.json ``model_type`` (for hub ids and folders given without an alias)."""
    for fam in FAMILIES.values():
        if model_type in fam.model_types:
            return fam
    return None


def family_for_folder(folder) -> Family | None:
    import json
    from pathlib import Path

    cfg = Path(folder) / "config.json"
    if not cfg.exists():
        return None
    return family_for_model_type(json.loads(cfg.read_text()).get("model_type"))
