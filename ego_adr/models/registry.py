"""Model aliases: short names for the models the paper evaluates, resolved to hub ids.

Any hub id (``owner/name``) or local folder is accepted as well; an alias only saves typing and carries the
family, which decides the capabilities (Video-LLaVA cannot take text-only prompts, paper Section 3.2) and the
memory planner's architecture numbers. ``tiny*`` aliases are built offline on first use (see
:mod:`ego_adr.models.tiny`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelSpec:
    hub_id: str
    family: str  # qwen2-vl | qwen2.5-vl | qwen3-vl | llava-onevision | video-llava | internvl | text-llm | tiny
    notes: str = ""


ALIASES: dict[str, ModelSpec] = {
    "qwen2-vl": ModelSpec("Qwen/Qwen2-VL-7B-Instruct", "qwen2-vl", "paper Tables 3-6; Ego-ADR deep decoupling"),
    "qwen2.5-vl": ModelSpec("Qwen/Qwen2.5-VL-7B-Instruct", "qwen2.5-vl", "paper's main model (Tables 3-6)"),
    "qwen2.5-vl-3b": ModelSpec("Qwen/Qwen2.5-VL-3B-Instruct", "qwen2.5-vl", "smaller sibling, not in the paper"),
    "qwen3-vl": ModelSpec("Qwen/Qwen3-VL-8B-Instruct", "qwen3-vl", "paper Tables 3-4"),
    "qwen3-vl-32b": ModelSpec("Qwen/Qwen3-VL-32B-Instruct", "qwen3-vl", "paper Tables 3-4; needs > 24 GB"),
    "llava-onevision": ModelSpec("llava-hf/llava-onevision-qwen2-7b-ov-hf", "llava-onevision", "paper Tables 3-4"),
    "video-llava": ModelSpec(
        "LanguageBind/Video-LLaVA-7B-hf", "video-llava", "no text-only input: shallow decoupling (Section 3.2)"
    ),
    "internvl3.5": ModelSpec("OpenGVLab/InternVL3_5-8B-HF", "internvl", "8B sibling of the paper's 38B"),
    "internvl3.5-38b": ModelSpec("OpenGVLab/InternVL3_5-38B-HF", "internvl", "paper Tables 3-4; needs > 24 GB"),
    # Text-only judges of the open-ended evaluation (paper Section 4.2).
    "qwen2.5-7b": ModelSpec("Qwen/Qwen2.5-7B-Instruct", "text-llm", "open-ended judge (Section 3.4)"),
    "deepseek-7b": ModelSpec("deepseek-ai/deepseek-llm-7b-chat", "text-llm", "open-ended judge (Section 3.4)"),
    # Offline random models of real architectures, for tests and demos.
    "tiny": ModelSpec("tiny-qwen2.5-vl", "tiny", "random tiny Qwen2.5-VL built locally; random text"),
    "tiny-qwen2.5-vl": ModelSpec("tiny-qwen2.5-vl", "tiny", "random tiny Qwen2.5-VL built locally"),
    "tiny-qwen2-vl": ModelSpec("tiny-qwen2-vl", "tiny", "random tiny Qwen2-VL built locally"),
}

# Families whose processors accept a prompt without any visual input. Video-LLaVA is the paper's example of a
# model that cannot (Section 3.2, Table 5), so the pipeline routes it to shallow decoupling.
TEXT_ONLY_FAMILIES = {"qwen2-vl", "qwen2.5-vl", "qwen3-vl", "llava-onevision", "internvl", "text-llm", "tiny"}

# config.json model_type -> family, for hub ids and folders given without an alias.
MODEL_TYPE_FAMILY = {
    "qwen2_vl": "qwen2-vl",
    "qwen2_5_vl": "qwen2.5-vl",
    "qwen3_vl": "qwen3-vl",
    "qwen3_vl_moe": "qwen3-vl",
    "llava_onevision": "llava-onevision",
    "video_llava": "video-llava",
    "internvl": "internvl",
}


def _by_hub_id(hub_id: str) -> ModelSpec | None:
    for spec in ALIASES.values():
        if spec.hub_id.lower() == hub_id.lower():
            return spec
    return None


def resolve(name: str) -> tuple[str, ModelSpec | None]:
    """Alias -> (hub id, spec); hub id -> (hub id, spec if it is a known one); folder -> (path, None).

    ``tiny*`` aliases resolve to the folder built by :func:`ego_adr.models.tiny.ensure_tiny` (built on first
    use, offline). No network is touched here.
    """
    key = name.strip()
    spec = ALIASES.get(key.lower())
    if spec is not None:
        if spec.family == "tiny":
            from ego_adr.models.tiny import ensure_tiny

            return str(ensure_tiny(spec.hub_id.removeprefix("tiny-"))), spec
        return spec.hub_id, spec
    if Path(os.path.expanduser(key)).is_dir():
        return str(Path(os.path.expanduser(key)).resolve()), None
    return key, _by_hub_id(key)


def family_from_model_type(model_type: str | None) -> str | None:
    return MODEL_TYPE_FAMILY.get(model_type or "")


def alias_table() -> str:
    """Markdown table of the aliases (README, ``--help`` epilogues, error messages)."""
    rows = ["| alias | model | family | notes |", "|---|---|---|---|"]
    rows += [f"| `{a}` | `{s.hub_id}` | {s.family} | {s.notes} |" for a, s in ALIASES.items()]
    return "\n".join(rows)


def unknown_model_message(name: str, known: bool = False) -> str:
    if known:
        return (
            f"Model {name!r} is known but not available offline: the Hugging Face cache has no copy of it and "
            "HF_HUB_OFFLINE is set (or the hub cannot be reached). Download it on a machine with network access "
            f"(`hf download {name}`, then copy the cache or point HF_HOME at it), or pass a local folder holding "
            "the model. For an offline demo use the alias `tiny`."
        )
    return (
        f"Unknown model {name!r}: it is not an alias, not an existing local folder, and not a hub id available "
        "offline (HF_HUB_OFFLINE is set or the hub cache has no copy of it). Use one of the aliases "
        f"{', '.join(ALIASES)}; or pass a local folder holding a Hugging Face model (config.json, weights, "
        "processor files); or download it first with network access (e.g. `hf download <hub_id>`) and run "
        "again. For an offline demo use `tiny`."
    )
