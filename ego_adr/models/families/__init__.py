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

__all__ = ["FAMILIES", "Family", "HubModel", "family_for_folder", "family_for_model_type", "get_family"]


def _load() -> dict[str, Family]:
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
    return {f.name: f for f in fams}


FAMILIES: dict[str, Family] = _load()


def get_family(name: str | None) -> Family | None:
    return FAMILIES.get(name or "")


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
